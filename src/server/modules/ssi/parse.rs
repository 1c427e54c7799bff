//! The SSI parser: nginx's `ngx_http_ssi_parse` state machine, fed one
//! piece of the body at a time. A command may span any number of pieces:
//! the parser keeps its state (and the command read so far) between them.
//!
//! It returns what it found as [`Step`]s: text to pass on (a range of the
//! current piece, or the part of `<!--` that an earlier piece began and that
//! turned out not to open a command), a complete command, or a malformed
//! one (after its `-->`). Errors are worded as nginx logs them.
//!
//! Pure byte work: no I/O; memory bounded by the limits below and
//! `ssi_value_length`.

use std::ops::Range;

/// The longest command name (`NGX_HTTP_SSI_COMMAND_LEN`).
pub const COMMAND_LEN: usize = 32;
/// The longest parameter name (`NGX_HTTP_SSI_PARAM_LEN`).
pub const PARAM_LEN: usize = 32;
/// The most parameters a command may have (`NGX_HTTP_SSI_MAX_PARAMS`);
/// more are read but not kept.
pub const MAX_PARAMS: usize = 16;

/// What opens a command.
const OPEN: &[u8; 4] = b"<!--";

/// nginx's parser states (`ngx_http_ssi_state_e`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Text.
    Start,
    /// After `<`.
    Tag,
    /// After `<!`.
    Comment0,
    /// After `<!-`.
    Comment1,
    /// After `<!--`.
    Sharp,
    /// After `<!--#`, before the command's name.
    Precommand,
    /// In the command's name.
    Command,
    /// Before a parameter.
    Preparam,
    /// In a parameter's name.
    Param,
    /// After a parameter's name, before `=`.
    Preequal,
    /// After `=`, before the value's quote.
    Prevalue,
    /// In a `"…"` value.
    DoubleQuotedValue,
    /// In a `'…'` value.
    QuotedValue,
    /// After a backslash in a value.
    QuotedSymbol,
    /// After a value's closing quote.
    Postparam,
    /// After the `-` of `-->`.
    CommentEnd0,
    /// After the `--` of `-->`.
    CommentEnd1,
    /// In a malformed command, until `-->`.
    Error,
    /// After a `-` in a malformed command.
    ErrorEnd0,
    /// After `--` in a malformed command.
    ErrorEnd1,
}

/// One parameter of a command, as written (the value keeps backslashes).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Param {
    /// The name.
    pub key: Vec<u8>,
    /// The value between the quotes.
    pub value: Vec<u8>,
}

/// What the parser found next.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Text to pass on: these bytes of the current piece.
    Text(Range<usize>),
    /// Text to pass on: the start of `<!--` an earlier piece held back.
    Held(&'static [u8]),
    /// A command was read: [`Parser::command`] and [`Parser::params`].
    Command,
    /// A malformed command ended; the error was logged.
    Error,
    /// The piece is consumed.
    More,
}

/// The parser's state between pieces.
#[derive(Debug)]
pub struct Parser {
    /// Where the parser stands.
    state: State,
    /// The state a backslash in a value returns to.
    saved_state: State,
    /// How many bytes of `<!--` were matched (nginx's `looked`).
    looked: usize,
    /// The command's name.
    command: Vec<u8>,
    /// The parameters read (at most [`MAX_PARAMS`] + 1 are kept).
    params: Vec<Param>,
    /// Parameters beyond those kept.
    extra_params: usize,
    /// The parameter being read.
    param: Param,
    /// `ssi_value_length`.
    value_len: usize,
}

impl Parser {
    /// A parser whose values may be `value_len` bytes long.
    pub fn new(value_len: usize) -> Parser {
        Parser {
            state: State::Start,
            saved_state: State::Start,
            looked: 0,
            command: Vec::new(),
            params: Vec::new(),
            extra_params: 0,
            param: Param::default(),
            value_len,
        }
    }

    /// The last command's name.
    pub fn command(&self) -> &[u8] {
        &self.command
    }

    /// The last command's parameters.
    pub fn params(&self) -> &[Param] {
        &self.params
    }

    /// How many parameters the last command had.
    pub fn param_count(&self) -> usize {
        self.params.len() + self.extra_params
    }

    /// Whether the parser stands outside any command (text may follow).
    pub fn in_text(&self) -> bool {
        self.state == State::Start
    }

    /// Finishes the parameter being read: kept, or counted beyond the limit.
    fn push_param(&mut self) {
        let p = std::mem::take(&mut self.param);
        if self.params.len() <= MAX_PARAMS {
            self.params.push(p);
        } else {
            self.extra_params += 1;
        }
    }

    /// The next step over `piece` from `*pos`, which it advances. Errors go
    /// to `log` in nginx's words.
    pub fn step(&mut self, piece: &[u8], pos: &mut usize, log: &mut dyn FnMut(String)) -> Step {
        let mut p = *pos;
        while p < piece.len() {
            let ch = piece[p];
            match self.state {
                State::Start => {
                    // The tight loop: text up to the next `<`.
                    let end = piece[p..]
                        .iter()
                        .position(|&c| c == b'<')
                        .map_or(piece.len(), |i| p + i);
                    if end > p {
                        *pos = end;
                        return Step::Text(p..end);
                    }
                    self.looked = 1;
                    self.state = State::Tag;
                }
                State::Tag | State::Comment0 | State::Comment1 | State::Sharp => {
                    let expected = match self.state {
                        State::Tag => b'!',
                        State::Sharp => b'#',
                        _ => b'-',
                    };
                    if ch == expected {
                        if self.state == State::Sharp {
                            // A command: what was held back is dropped.
                            self.looked = 0;
                            self.state = State::Precommand;
                        } else {
                            self.looked += 1;
                            self.state = match self.state {
                                State::Tag => State::Comment0,
                                State::Comment0 => State::Comment1,
                                _ => State::Sharp,
                            };
                        }
                    } else {
                        // Not a command: what was matched is text. A `<`
                        // starts a new match; anything else is text too.
                        let held = &OPEN[..self.looked];
                        if ch == b'<' {
                            self.looked = 1;
                            self.state = State::Tag;
                            *pos = p + 1;
                        } else {
                            self.looked = 0;
                            self.state = State::Start;
                            *pos = p;
                        }
                        return Step::Held(held);
                    }
                }
                State::Precommand => match ch {
                    b' ' | b'\r' | b'\n' | b'\t' => {}
                    _ => {
                        self.command.clear();
                        self.command.push(ch);
                        self.params.clear();
                        self.extra_params = 0;
                        self.state = State::Command;
                    }
                },
                State::Command => match ch {
                    b' ' | b'\r' | b'\n' | b'\t' => self.state = State::Preparam,
                    b'-' => self.state = State::CommentEnd0,
                    _ => {
                        if self.command.len() == COMMAND_LEN {
                            log(format!(
                                "the \"{}{}...\" SSI command is too long",
                                lossy(&self.command),
                                ch as char
                            ));
                            self.state = State::Error;
                        } else {
                            self.command.push(ch);
                        }
                    }
                },
                State::Preparam => match ch {
                    b' ' | b'\r' | b'\n' | b'\t' => {}
                    b'-' => self.state = State::CommentEnd0,
                    _ => {
                        self.param = Param {
                            key: vec![ch],
                            value: Vec::new(),
                        };
                        self.state = State::Param;
                    }
                },
                State::Param => match ch {
                    b' ' | b'\r' | b'\n' | b'\t' => self.state = State::Preequal,
                    b'=' => self.state = State::Prevalue,
                    b'-' => {
                        self.state = State::ErrorEnd0;
                        log(format!(
                            "unexpected \"-\" symbol after \"{}\" parameter in \"{}\" SSI command",
                            lossy(&self.param.key),
                            lossy(&self.command)
                        ));
                    }
                    _ => {
                        if self.param.key.len() == PARAM_LEN {
                            self.state = State::Error;
                            log(format!(
                                "too long \"{}{}...\" parameter in \"{}\" SSI command",
                                lossy(&self.param.key),
                                ch as char,
                                lossy(&self.command)
                            ));
                        } else {
                            self.param.key.push(ch);
                        }
                    }
                },
                State::Preequal => match ch {
                    b' ' | b'\r' | b'\n' | b'\t' => {}
                    b'=' => self.state = State::Prevalue,
                    _ => {
                        self.state = if ch == b'-' {
                            State::ErrorEnd0
                        } else {
                            State::Error
                        };
                        log(format!(
                            "unexpected \"{}\" symbol after \"{}\" parameter in \"{}\" SSI command",
                            ch as char,
                            lossy(&self.param.key),
                            lossy(&self.command)
                        ));
                    }
                },
                State::Prevalue => match ch {
                    b' ' | b'\r' | b'\n' | b'\t' => {}
                    b'"' => self.state = State::DoubleQuotedValue,
                    b'\'' => self.state = State::QuotedValue,
                    _ => {
                        self.state = if ch == b'-' {
                            State::ErrorEnd0
                        } else {
                            State::Error
                        };
                        log(format!(
                            "unexpected \"{}\" symbol before value of \"{}\" parameter in \"{}\" SSI command",
                            ch as char,
                            lossy(&self.param.key),
                            lossy(&self.command)
                        ));
                    }
                },
                State::DoubleQuotedValue | State::QuotedValue => {
                    let quote = if self.state == State::DoubleQuotedValue {
                        b'"'
                    } else {
                        b'\''
                    };
                    if ch == quote {
                        self.state = State::Postparam;
                    } else {
                        if ch == b'\\' {
                            // The backslash is kept, and so is what follows.
                            self.saved_state = self.state;
                            self.state = State::QuotedSymbol;
                        }
                        self.value_byte(ch, log);
                    }
                }
                State::QuotedSymbol => {
                    self.state = self.saved_state;
                    self.value_byte(ch, log);
                }
                State::Postparam => {
                    self.push_param();
                    match ch {
                        b' ' | b'\r' | b'\n' | b'\t' => self.state = State::Preparam,
                        b'-' => self.state = State::CommentEnd0,
                        _ => {
                            let last = self.params.last().cloned().unwrap_or_default();
                            log(format!(
                                "unexpected \"{}\" symbol after \"{}\" value of \"{}\" parameter in \"{}\" SSI command",
                                ch as char,
                                lossy(&last.value),
                                lossy(&last.key),
                                lossy(&self.command)
                            ));
                            self.state = State::Error;
                        }
                    }
                }
                State::CommentEnd0 | State::CommentEnd1 => {
                    let want = if self.state == State::CommentEnd0 {
                        b'-'
                    } else {
                        b'>'
                    };
                    if ch == want {
                        if self.state == State::CommentEnd1 {
                            self.state = State::Start;
                            *pos = p + 1;
                            return Step::Command;
                        }
                        self.state = State::CommentEnd1;
                    } else {
                        log(format!(
                            "unexpected \"{}\" symbol in \"{}\" SSI command",
                            ch as char,
                            lossy(&self.command)
                        ));
                        self.state = State::Error;
                    }
                }
                State::Error => {
                    if ch == b'-' {
                        self.state = State::ErrorEnd0;
                    }
                }
                State::ErrorEnd0 => {
                    self.state = if ch == b'-' {
                        State::ErrorEnd1
                    } else {
                        State::Error
                    };
                }
                State::ErrorEnd1 => {
                    if ch == b'>' {
                        self.state = State::Start;
                        *pos = p + 1;
                        return Step::Error;
                    }
                    self.state = State::Error;
                }
            }
            p += 1;
        }
        *pos = p;
        Step::More
    }

    /// Adds `ch` to the value being read, within `ssi_value_length`.
    fn value_byte(&mut self, ch: u8, log: &mut dyn FnMut(String)) {
        if self.param.value.len() == self.value_len {
            log(format!(
                "too long \"{}{}...\" value of \"{}\" parameter in \"{}\" SSI command",
                lossy(&self.param.value),
                ch as char,
                lossy(&self.param.key),
                lossy(&self.command)
            ));
            self.state = State::Error;
            return;
        }
        self.param.value.push(ch);
    }
}

/// Bytes as text for a message.
pub fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the parser makes of `pieces`: text, `{cmd k=v}` and `{error}`.
    fn run(pieces: &[&str], value_len: usize) -> (String, Vec<String>) {
        let mut p = Parser::new(value_len);
        let mut out = String::new();
        let mut logs = Vec::new();
        for piece in pieces {
            let bytes = piece.as_bytes();
            let mut pos = 0;
            loop {
                let step = p.step(bytes, &mut pos, &mut |m| logs.push(m));
                match step {
                    Step::Text(r) => out.push_str(&piece[r]),
                    Step::Held(h) => out.push_str(std::str::from_utf8(h).unwrap()),
                    Step::Command => {
                        out.push('{');
                        out.push_str(&lossy(p.command()));
                        for prm in p.params() {
                            out.push_str(&format!(" {}={}", lossy(&prm.key), lossy(&prm.value)));
                        }
                        out.push('}');
                    }
                    Step::Error => out.push_str("{error}"),
                    Step::More => break,
                }
            }
        }
        (out, logs)
    }

    #[test]
    fn commands_and_text() {
        let (out, logs) = run(
            &["a<!--#echo var=\"x\" -->b<!--#set var='v' value=\"1 2\"-->c"],
            255,
        );
        assert_eq!(out, "a{echo var=x}b{set var=v value=1 2}c");
        assert!(logs.is_empty());
    }

    #[test]
    fn a_command_split_anywhere_is_the_same_command() {
        let text = "x<!--#include virtual=\"/a?b\" -->y<!-- plain -->z<<!--#endif-->";
        let (whole, _) = run(&[text], 255);
        assert_eq!(whole, "x{include virtual=/a?b}y<!-- plain -->z<{endif}");
        for cut in 1..text.len() {
            let (split, _) = run(&[&text[..cut], &text[cut..]], 255);
            assert_eq!(split, whole, "cut at {cut}");
        }
    }

    #[test]
    fn comments_and_near_misses_are_text() {
        let (out, _) = run(&["<!-x<!x<x<<!--x<!--"], 255);
        // A trailing `<!--` is held back and dropped at the end, as nginx.
        assert_eq!(out, "<!-x<!x<x<<!--x");
    }

    #[test]
    fn backslashes_stay_in_values() {
        let (out, _) = run(&[r#"<!--#echo var="a\"b\\c" -->"#], 255);
        assert_eq!(out, r#"{echo var=a\"b\\c}"#);
    }

    #[test]
    fn errors_are_nginx_s_and_swallow_up_to_the_end() {
        let (out, logs) = run(&["a<!--#echo var=x -->b"], 255);
        assert_eq!(out, "a{error}b");
        assert_eq!(
            logs,
            vec![
                "unexpected \"x\" symbol before value of \"var\" parameter in \"echo\" SSI command"
            ]
        );
        let (out, logs) = run(&["<!--#echo var=\"toolong\" -->"], 4);
        assert_eq!(out, "{error}");
        assert_eq!(
            logs,
            vec![
                "too long \"tool o...\" value of \"var\" parameter in \"echo\" SSI command"
                    .replace("tool o", "toolo")
            ]
        );
        let long = format!("<!--#{} -->", "c".repeat(40));
        let (out, logs) = run(&[&long], 255);
        assert_eq!(out, "{error}");
        assert!(
            logs[0].ends_with("...\" SSI command is too long"),
            "{logs:?}"
        );
        let (out, logs) = run(&["<!--#echo var=\"x\"y -->"], 255);
        assert_eq!(out, "{error}");
        assert_eq!(
            logs,
            vec![
                "unexpected \"y\" symbol after \"x\" value of \"var\" parameter in \"echo\" SSI command"
            ]
        );
        let (out, logs) = run(&["<!--#echo var-->"], 255);
        assert_eq!(out, "{error}");
        assert_eq!(
            logs,
            vec!["unexpected \"-\" symbol after \"var\" parameter in \"echo\" SSI command"]
        );
    }

    #[test]
    fn parameters_beyond_the_limit_are_counted() {
        let params: String = (0..20).map(|i| format!(" p{i}=\"v\"")).collect();
        let mut p = Parser::new(255);
        let text = format!("<!--#x{params} -->");
        let mut pos = 0;
        assert_eq!(
            p.step(text.as_bytes(), &mut pos, &mut |_| {}),
            Step::Command
        );
        assert_eq!(p.param_count(), 20);
        assert_eq!(p.params().len(), MAX_PARAMS + 1);
    }
}
