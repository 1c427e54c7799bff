//! The tokenizer of nginx's configuration language, as `ngx_conf_read_token()`
//! reads it.
//!
//! A statement is a run of words ended by `;` (a simple directive), `{` (a
//! block opens) or preceded by `}` (a block closes). Words are separated by
//! spaces, tabs and line ends; `#` starts a comment to the end of the line;
//! `"…"` and `'…'` quote; a backslash protects the next character. As in
//! nginx, `\"`, `\'` and `\\` drop their backslash, `\t`, `\r`, `\n` become the
//! control characters, and any other backslash is kept. Unlike the oldest
//! nginx versions, `${name}` inside an unquoted word is part of the word.
//!
//! The lexer owns no semantics: it only produces [`Statement`]s with lines.

use super::error::ConfError;
use super::source::{Loc, Origin};

/// A word of a statement, after quote and escape processing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Word {
    /// The word's value with quotes removed and escapes applied.
    pub value: String,
    /// Whether it was written in quotes (so `""` is an empty word).
    pub quoted: bool,
}

/// How a statement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// `;` — a simple directive.
    Semicolon,
    /// `{` — a block directive whose body follows.
    BlockStart,
    /// `}` — the end of the enclosing block (no words).
    BlockEnd,
    /// End of input (no words).
    Eof,
}

/// One statement: its words, how it ended, and the line of its first word.
#[derive(Clone, Debug)]
pub struct Statement {
    /// The directive name followed by its arguments; empty for `}` and EOF.
    pub words: Vec<Word>,
    /// What terminated the statement.
    pub end: End,
    /// The line the statement started on (nginx reports the line where the
    /// terminator was read; see [`Statement::end_line`]).
    pub line: u32,
    /// The line on which the terminator was read, which is what nginx prints.
    pub end_line: u32,
}

/// A tokenizer over one file's text.
pub struct Lexer<'a> {
    src: &'a [u8],
    pos: usize,
    line: u32,
    loc: Loc,
}

impl<'a> Lexer<'a> {
    /// A lexer over `text`; `loc` names the origin (its line is ignored).
    pub fn new(text: &'a str, loc: Loc) -> Lexer<'a> {
        Lexer {
            src: text.as_bytes(),
            pos: 0,
            line: 1,
            loc,
        }
    }

    /// The current line, for errors raised by the caller.
    pub fn loc(&self) -> Loc {
        Loc {
            origin: self.loc.origin.clone(),
            line: self.line,
        }
    }

    fn err(&self, msg: String) -> ConfError {
        ConfError::emerg(msg, Some(self.loc()))
    }

    /// The end of the input in the middle of a statement, in nginx's words:
    /// a `-g` string is a "parameter" that must end with `;`.
    fn eof_in_statement(&self) -> ConfError {
        match self.loc.origin {
            Origin::CommandLine => self.err("unexpected end of parameter, expecting \";\"".into()),
            _ => self.err("unexpected end of file, expecting \";\" or \"}\"".into()),
        }
    }

    fn next_byte(&mut self) -> Option<u8> {
        let ch = *self.src.get(self.pos)?;
        self.pos += 1;
        if ch == b'\n' {
            self.line += 1;
        }
        Some(ch)
    }

    /// Reads the next statement.
    pub fn next_statement(&mut self) -> Result<Statement, ConfError> {
        let mut words = Vec::new();
        let mut start_line = None;
        loop {
            // Between words: skip blanks and comments, look at terminators.
            let Some(ch) = self.next_byte() else {
                if !words.is_empty() {
                    return Err(self.eof_in_statement());
                }
                return Ok(self.statement(words, End::Eof, start_line));
            };
            match ch {
                b' ' | b'\t' | b'\r' | b'\n' => continue,
                b'#' => {
                    while let Some(c) = self.next_byte() {
                        if c == b'\n' {
                            break;
                        }
                    }
                    continue;
                }
                b';' | b'{' => {
                    if words.is_empty() {
                        return Err(self.err(format!("unexpected \"{}\"", ch as char)));
                    }
                    let end = if ch == b'{' {
                        End::BlockStart
                    } else {
                        End::Semicolon
                    };
                    return Ok(self.statement(words, end, start_line));
                }
                b'}' => {
                    if !words.is_empty() {
                        return Err(self.err("unexpected \"}\"".into()));
                    }
                    return Ok(self.statement(words, End::BlockEnd, start_line));
                }
                _ => {}
            }
            start_line.get_or_insert(self.line);
            let (word, terminator) = self.read_word(ch)?;
            words.push(word);
            match terminator {
                Some(b';') => return Ok(self.statement(words, End::Semicolon, start_line)),
                Some(b'{') => return Ok(self.statement(words, End::BlockStart, start_line)),
                _ => {}
            }
        }
    }

    fn statement(&self, words: Vec<Word>, end: End, start_line: Option<u32>) -> Statement {
        Statement {
            words,
            end,
            line: start_line.unwrap_or(self.line),
            end_line: self.line,
        }
    }

    /// Reads one word whose first byte is `first`. Returns the word and the
    /// terminator that ended it when that terminator also ends the statement
    /// (`;` or `{` right after the word).
    fn read_word(&mut self, first: u8) -> Result<(Word, Option<u8>), ConfError> {
        let quote = match first {
            b'"' | b'\'' => Some(first),
            _ => None,
        };
        let mut raw = Vec::new();
        if quote.is_none() {
            self.pos -= 1;
            if first == b'\n' {
                self.line -= 1;
            }
        }
        let mut dollar = false;
        loop {
            let Some(ch) = self.next_byte() else {
                return Err(self.eof_in_statement());
            };
            if ch == b'\\' {
                raw.push(ch);
                match self.next_byte() {
                    Some(c) => raw.push(c),
                    None => {
                        return Err(self.eof_in_statement());
                    }
                }
                dollar = false;
                continue;
            }
            if let Some(q) = quote {
                if ch == q {
                    // A closing quote must be followed by a space or a terminator.
                    let after = self.next_byte();
                    return match after {
                        Some(b' ' | b'\t' | b'\r' | b'\n') => Ok((unescape(&raw, true), None)),
                        // nginx lets `)` follow a quote, as a word of its
                        // own: `if ($a = "b")`.
                        Some(b')') => {
                            self.pos -= 1;
                            Ok((unescape(&raw, true), None))
                        }
                        Some(c @ (b';' | b'{')) => Ok((unescape(&raw, true), Some(c))),
                        Some(c) => Err(self.err(format!("unexpected \"{}\"", c as char))),
                        None => Err(self.eof_in_statement()),
                    };
                }
                raw.push(ch);
                continue;
            }
            match ch {
                b' ' | b'\t' | b'\r' | b'\n' => return Ok((unescape(&raw, false), None)),
                b';' => return Ok((unescape(&raw, false), Some(b';'))),
                b'{' if dollar => raw.push(ch),
                b'{' => return Ok((unescape(&raw, false), Some(b'{'))),
                _ => raw.push(ch),
            }
            dollar = ch == b'$';
        }
    }
}

/// Applies nginx's escape rules to a word's raw bytes.
fn unescape(raw: &[u8], quoted: bool) -> Word {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() {
            match raw[i + 1] {
                b'"' | b'\'' | b'\\' => {
                    out.push(raw[i + 1]);
                    i += 2;
                    continue;
                }
                b't' => {
                    out.push(b'\t');
                    i += 2;
                    continue;
                }
                b'r' => {
                    out.push(b'\r');
                    i += 2;
                    continue;
                }
                b'n' => {
                    out.push(b'\n');
                    i += 2;
                    continue;
                }
                _ => {}
            }
        }
        out.push(raw[i]);
        i += 1;
    }
    Word {
        value: String::from_utf8_lossy(&out).into_owned(),
        quoted,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lex(text: &str) -> Result<Vec<(Vec<String>, End, u32)>, String> {
        lex_from(
            text,
            Origin::File(std::sync::Arc::from(std::path::Path::new("/t.conf"))),
        )
    }

    fn lex_from(text: &str, origin: Origin) -> Result<Vec<(Vec<String>, End, u32)>, String> {
        let mut lx = Lexer::new(text, Loc { origin, line: 0 });
        let mut out = Vec::new();
        loop {
            let st = lx.next_statement().map_err(|e| e.to_string())?;
            let end = st.end;
            out.push((
                st.words.into_iter().map(|w| w.value).collect(),
                end,
                st.line,
            ));
            if end == End::Eof {
                return Ok(out);
            }
        }
    }

    #[test]
    fn words_blocks_comments() {
        let got = lex("worker_processes 2; # c\nhttp {\n  root '/a b';\n}\n").unwrap();
        assert_eq!(got[0].0, vec!["worker_processes", "2"]);
        assert_eq!(got[1], (vec!["http".to_string()], End::BlockStart, 2));
        assert_eq!(
            got[2],
            (
                vec!["root".to_string(), "/a b".to_string()],
                End::Semicolon,
                3
            )
        );
        assert_eq!(got[3].1, End::BlockEnd);
        assert_eq!(got[4].1, End::Eof);
    }

    #[test]
    fn escapes_like_nginx() {
        let got = lex(r#"return 200 "a\"b\tc\nd\x\\";"#).unwrap();
        assert_eq!(got[0].0[2], "a\"b\tc\nd\\x\\");
        let got = lex(r"add_header X a\ b;").unwrap();
        // As in nginx, a backslash keeps a space inside the word and stays.
        assert_eq!(got[0].0[2], "a\\ b");
    }

    #[test]
    fn braces_in_variables_stay_in_word() {
        let got = lex("set $a ${b}c;").unwrap();
        assert_eq!(got[0].0, vec!["set", "$a", "${b}c"]);
        let got = lex("location /x{ }").unwrap();
        assert_eq!(
            got[0],
            (
                vec!["location".to_string(), "/x".to_string()],
                End::BlockStart,
                1
            )
        );
    }

    #[test]
    fn errors_like_nginx() {
        assert!(lex("a \"b\"c;").unwrap_err().contains("unexpected \"c\""));
        // A quoted word may be closed by `)`, which starts a word.
        let (words, end, _) = lex("if ($a = \"b\") {").unwrap().remove(0);
        assert_eq!(words, ["if", "($a", "=", "b", ")"]);
        assert_eq!(end, End::BlockStart);
        assert!(lex(";").unwrap_err().contains("unexpected \";\""));
        assert!(lex("a }").unwrap_err().contains("unexpected \"}\""));
        assert!(
            lex("a b")
                .unwrap_err()
                .contains("unexpected end of file, expecting \";\" or \"}\"")
        );
        assert!(lex("a \"b").unwrap_err().contains("unexpected end of file"));
    }

    #[test]
    fn empty_quoted_word() {
        let got = lex("server_name \"\";").unwrap();
        assert_eq!(got[0].0, vec!["server_name", ""]);
    }

    /// Regression: `-g "daemon off"` said "end of file", nginx says "end of parameter".
    #[test]
    fn command_line_ends_as_a_parameter() {
        let e = lex_from("daemon off", Origin::CommandLine).unwrap_err();
        assert_eq!(
            e,
            "unexpected end of parameter, expecting \";\" in command line"
        );
        let e = lex_from("daemon \"off", Origin::CommandLine).unwrap_err();
        assert_eq!(
            e,
            "unexpected end of parameter, expecting \";\" in command line"
        );
    }
}
