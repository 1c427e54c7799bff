//! Regular expressions of the configuration (`location ~`, `rewrite`, `if`,
//! `map`, `server_name ~`): nginx hands them to PCRE; nowait compiles them
//! with the `regex` crate, whose syntax is PCRE's for everything
//! configurations use (classes, groups, named groups `(?<n>…)` and
//! `(?P<n>…)`, `\p{…}`, inline flags). PCRE's `\Q…\E` quoting is rewritten
//! here into escaped text; look-around and back-references, which the crate
//! refuses by design, are refused at load time with the crate's reason.

use regex::Regex;

/// Compiles `pattern` as nginx would hand it to PCRE, case-insensitive when
/// `caseless` (nginx's `NGX_REGEX_CASELESS`). The error is the message to
/// report: `invalid regular expression "…": reason`.
pub fn compile(pattern: &str, caseless: bool) -> Result<Regex, String> {
    #[cfg(fuzzing)]
    return fuzz_memo::compile(pattern, caseless);
    #[cfg(not(fuzzing))]
    compile_now(pattern, caseless)
}

/// Under the fuzzer only: the same pattern compiles once per process. The
/// config target's inputs share their regular expressions (a mutation
/// mostly changes other text), and building the crate's automata was
/// three quarters of each run's time; the result of a compile is the
/// same every time, so nothing of nowait's own code goes untested.
#[cfg(fuzzing)]
mod fuzz_memo {
    use std::cell::RefCell;
    use std::collections::HashMap;

    use regex::Regex;

    type Memo = HashMap<(String, bool), Result<Regex, String>>;

    thread_local! {
        static MEMO: RefCell<Memo> = RefCell::new(HashMap::new());
    }

    pub fn compile(pattern: &str, caseless: bool) -> Result<Regex, String> {
        let key = (pattern.to_string(), caseless);
        if let Some(hit) = MEMO.with(|m| m.borrow().get(&key).cloned()) {
            return hit;
        }
        let made = super::compile_now(pattern, caseless);
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= 5_000 {
                m.clear();
            }
            m.insert(key, made.clone());
        });
        made
    }
}

fn compile_now(pattern: &str, caseless: bool) -> Result<Regex, String> {
    let translated = ascii_classes(&unquote(pattern));
    let source = if caseless {
        format!("(?i){translated}")
    } else {
        translated
    };
    Regex::new(&source).map_err(|e| {
        let reason = e
            .to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ");
        format!("invalid regular expression \"{pattern}\": {reason}")
    })
}

/// [`compile`] for subjects that are bytes (an SSI `if` matches a value
/// that need not be UTF-8), case-sensitive. The error is the reason alone.
pub fn compile_bytes(pattern: &str) -> Result<regex::bytes::Regex, String> {
    regex::bytes::Regex::new(&ascii_classes(&unquote(pattern))).map_err(|e| {
        e.to_string()
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" ")
    })
}

/// Rewrites PCRE's `\Q…\E` (everything between taken literally; `\E` may
/// be missing at the end) into escaped text.
fn unquote(pattern: &str) -> String {
    if !pattern.contains("\\Q") {
        return pattern.to_string();
    }
    let mut out = String::with_capacity(pattern.len() * 2);
    let mut rest = pattern;
    while let Some(i) = find_unescaped(rest, "\\Q") {
        out.push_str(&rest[..i]);
        let quoted = &rest[i + 2..];
        let (text, after) = match quoted.find("\\E") {
            Some(j) => (&quoted[..j], &quoted[j + 2..]),
            None => (quoted, ""),
        };
        out.push_str(&regex::escape(text));
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Gives `\d \w \s`, their negations and `\b \B` the meanings PCRE gives
/// them as nginx compiles a pattern (no UTF mode): ASCII digits, word
/// characters, white space and word boundaries, where the crate's defaults
/// are Unicode's (`\d` would match `٣`). They become the crate's ASCII
/// (POSIX) classes. That is also far cheaper to build: a caseless `\w`
/// folds some 700 Unicode ranges, which made a configuration of many
/// `~*` locations slow to load. Inside a class PCRE takes `[` (but for
/// `[:name:]`), `&&` and `~~` literally; the crate would read a nested class
/// or a set operation, so those are escaped.
fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    // Just after `[` or `[^`, where `]` is a literal.
    let mut class_start = false;
    while let Some(c) = chars.next() {
        let at_start = std::mem::take(&mut class_start);
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let name = match n {
                    'd' => Some("digit"),
                    'D' => Some("^digit"),
                    'w' => Some("word"),
                    'W' => Some("^word"),
                    's' => Some("space"),
                    'S' => Some("^space"),
                    _ => None,
                };
                match name {
                    Some(name) if in_class => {
                        out.push_str("[:");
                        out.push_str(name);
                        out.push_str(":]");
                    }
                    Some(name) => {
                        out.push_str("[[:");
                        out.push_str(name);
                        out.push_str(":]]");
                    }
                    None if !in_class && (n == 'b' || n == 'B') => {
                        out.push_str("(?-u:\\");
                        out.push(n);
                        out.push(')');
                    }
                    None => {
                        out.push('\\');
                        out.push(n);
                    }
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                class_start = true;
            }
            '[' => {
                let rest: String = chars.clone().take_while(|&c| c != ']').collect();
                match rest.strip_prefix(':').filter(|r| r.ends_with(':')) {
                    Some(_) => {
                        out.push('[');
                        out.push_str(&rest);
                        out.push(']');
                        for _ in 0..rest.chars().count() + 1 {
                            chars.next();
                        }
                    }
                    None => out.push_str("\\["),
                }
            }
            ']' if in_class && !at_start => {
                in_class = false;
                out.push(']');
            }
            '&' | '~' if in_class && chars.peek() == Some(&c) => {
                out.push(c);
                out.push('\\');
                out.push(chars.next().unwrap_or(c));
            }
            _ => out.push(c),
        }
    }
    out
}

/// The position of `needle` (a backslash sequence) in `s` where its
/// backslash is not itself escaped.
fn find_unescaped(s: &str, needle: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if s[i..].starts_with(needle) {
                return Some(i);
            }
            i += 2;
            continue;
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcre_quoting_is_literal() {
        let re = compile(r"^(?P<name>[a-z]+)\Q.example.com\E$", false).unwrap();
        assert!(re.is_match("blah.example.com"));
        assert!(!re.is_match("blahxexample.com"));
        let re = compile(r"^\Q(a+)", false).unwrap();
        assert!(re.is_match("(a+)"));
        let re = compile(r"^\\Q$", false).unwrap();
        assert!(re.is_match("\\Q"));
    }

    #[test]
    fn perl_classes_are_ascii_as_in_pcre() {
        let re = compile(r"^\d+$", false).unwrap();
        assert!(re.is_match("0123"));
        assert!(
            !re.is_match("\u{663}"),
            "Arabic-Indic three is not a PCRE digit"
        );
        let re = compile(r"^\w+\s\W\S\D$", true).unwrap();
        assert!(re.is_match("Ab_9 .xy"));
        assert!(!re.is_match("\u{e9} .xy"), "é is not a PCRE word character");
        let re = compile(r"^[\w.-]+[^\d]$", false).unwrap();
        assert!(re.is_match("a.b-x"));
        assert!(!re.is_match("a.b-1"));
        let re = compile(r"\bcat\b", false).unwrap();
        assert!(re.is_match("a cat."));
        assert!(!re.is_match("concat"));
        let re = compile(r"a\Bb", false).unwrap();
        assert!(re.is_match("ab"));
        assert!(!re.is_match("a b"));
        let re = compile(r"^[]a]+[[:digit:]]$", false).unwrap();
        assert!(re.is_match("]a]1"));
        let re = compile(r"^[[a&&b~~]+$", false).unwrap();
        assert!(re.is_match("[a&b~"));
        let re = compile(r"^\\w$", false).unwrap();
        assert!(re.is_match("\\w"));
        let re = compile(r"^\Q\d\E$", false).unwrap();
        assert!(re.is_match("\\d"));
    }

    #[test]
    fn caseless_and_errors() {
        assert!(compile("^abc$", true).unwrap().is_match("ABC"));
        assert!(!compile("^abc$", false).unwrap().is_match("ABC"));
        let e = compile("^(", false).unwrap_err();
        assert!(e.starts_with("invalid regular expression \"^(\": "), "{e}");
    }
}
