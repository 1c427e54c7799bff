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
    let translated = unquote(pattern);
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
    regex::bytes::Regex::new(&unquote(pattern)).map_err(|e| {
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
    fn caseless_and_errors() {
        assert!(compile("^abc$", true).unwrap().is_match("ABC"));
        assert!(!compile("^abc$", false).unwrap().is_match("ABC"));
        let e = compile("^(", false).unwrap_err();
        assert!(e.starts_with("invalid regular expression \"^(\": "), "{e}");
    }
}
