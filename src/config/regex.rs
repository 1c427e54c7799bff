//! Regular expressions of the configuration (`location ~`, `rewrite`, `if`,
//! `map`, `server_name ~`): nginx hands them to PCRE; nowait compiles them
//! with the `regex` crate, whose syntax is PCRE's for everything
//! configurations use (classes, groups, named groups `(?<n>…)` and
//! `(?P<n>…)`, `\p{…}`, inline flags). PCRE's `\Q…\E` quoting is rewritten
//! here into escaped text. Look-around and back-references, which the crate
//! refuses by design, are compiled by `fancy-regex` (a backtracking matcher
//! over the same crate, bounded as PCRE's match limit bounds nginx's): only
//! the patterns that use them pay for backtracking. A syntax error is told
//! in PCRE's words, as nginx prints it.

/// A compiled regular expression of the configuration.
#[derive(Clone, Debug)]
pub struct Regex(Engine);

#[derive(Clone, Debug)]
enum Engine {
    /// The `regex` crate: linear time, everything but the below.
    Plain(regex::Regex),
    /// `fancy-regex`: look-around and back-references.
    Backtracking(Box<fancy_regex::Regex>),
}

/// How many steps a backtracking match may take before it is given up
/// (PCRE2's default match limit, which nginx keeps).
const BACKTRACK_LIMIT: usize = 10_000_000;

impl Regex {
    /// Whether `subject` matches. A backtracking match that runs out of
    /// steps is no match (nginx's is an error of the request).
    pub fn is_match(&self, subject: &str) -> bool {
        match &self.0 {
            Engine::Plain(re) => re.is_match(subject),
            Engine::Backtracking(re) => re.is_match(subject).unwrap_or(false),
        }
    }

    /// The number of groups, the whole match included.
    pub fn captures_len(&self) -> usize {
        match &self.0 {
            Engine::Plain(re) => re.captures_len(),
            Engine::Backtracking(re) => re.captures_len(),
        }
    }

    /// Each group's name, in order, the whole match (`None`) first.
    pub fn capture_names(&self) -> Vec<Option<&str>> {
        match &self.0 {
            Engine::Plain(re) => re.capture_names().collect(),
            Engine::Backtracking(re) => re.capture_names().collect(),
        }
    }

    /// Where each group matched in `subject`, the whole match first;
    /// `None` when `subject` does not match.
    pub fn captures(&self, subject: &str) -> Option<Vec<Option<(usize, usize)>>> {
        match &self.0 {
            Engine::Plain(re) => {
                let caps = re.captures(subject)?;
                Some(
                    caps.iter()
                        .map(|m| m.map(|m| (m.start(), m.end())))
                        .collect(),
                )
            }
            Engine::Backtracking(re) => {
                let caps = re.captures(subject).ok()??;
                Some(
                    (0..caps.len())
                        .map(|i| caps.get(i).map(|m| (m.start(), m.end())))
                        .collect(),
                )
            }
        }
    }

    /// The pattern as compiled (after the translation to the crate's syntax).
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Engine::Plain(re) => re.as_str(),
            Engine::Backtracking(re) => re.as_str(),
        }
    }
}

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

    use super::Regex;

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
    let plain = match regex::Regex::new(&source) {
        Ok(re) => return Ok(Regex(Engine::Plain(re))),
        Err(e) => e,
    };
    if needs_backtracking(&source) {
        if let Ok(re) = fancy_regex::RegexBuilder::new(&source)
            .backtrack_limit(BACKTRACK_LIMIT)
            .build()
        {
            return Ok(Regex(Engine::Backtracking(Box::new(re))));
        }
    }
    Err(plain).map_err(|e| {
        if let Some(said) = pcre_words(pattern) {
            return said;
        }
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

/// Whether the crate refuses `source` for what only a backtracking matcher
/// does: look-around, a back-reference, an atomic group.
///
/// Only those: `fancy-regex` gives some escapes other meanings than PCRE
/// (`\h` is a hex digit there, horizontal space in PCRE), so an escape or
/// a group the crate does not know is not handed over unless it is a
/// named back-reference (`\k<n>`), an atomic group (`(?>`) or a
/// condition (`(?(`).
fn needs_backtracking(source: &str) -> bool {
    use regex_syntax::ast::ErrorKind as K;
    // Escapes all three read alike; any other letter stays refused.
    const SAME_EVERYWHERE: &[u8] = b"dDwWsSbBAznrtfxpPk";
    let b = source.as_bytes();
    let mut i = 0;
    while i + 1 < b.len() {
        if b[i] == b'\\' {
            if b[i + 1].is_ascii_alphabetic() && !SAME_EVERYWHERE.contains(&b[i + 1]) {
                return false;
            }
            i += 1;
        }
        i += 1;
    }
    let Err(e) = regex_syntax::ast::parse::Parser::new().parse(source) else {
        return false;
    };
    let at = &source[e.span().start.offset..];
    match e.kind() {
        K::UnsupportedLookAround | K::UnsupportedBackreference => true,
        K::EscapeUnrecognized => at.starts_with("\\k"),
        K::FlagUnrecognized => at.starts_with(['>', '(']),
        _ => false,
    }
}

/// Whether the text after a `{` makes it a count, as PCRE 10.42 reads it:
/// digits, optionally a comma and more digits, and `}`.
fn is_count(mut rest: impl Iterator<Item = char>) -> bool {
    let mut digits = 0;
    let mut c = rest.next();
    while c.is_some_and(|c| c.is_ascii_digit()) {
        digits += 1;
        c = rest.next();
    }
    if digits == 0 {
        return false;
    }
    if c == Some(',') {
        c = rest.next();
        while c.is_some_and(|c| c.is_ascii_digit()) {
            c = rest.next();
        }
    }
    c == Some('}')
}

/// A syntax error PCRE would also find, in the words nginx prints for it
/// (`pcre2_compile() failed: missing closing parenthesis in "(a"`, with
/// ` at "…"` and the rest of the pattern from where PCRE stopped, unless it
/// stopped at the end). `None` for what PCRE accepts and the crate refuses
/// (look-around, back-references: nowait's own message says so), and for
/// errors this table does not know.
fn pcre_words(pattern: &str) -> Option<String> {
    use regex_syntax::ast::ErrorKind as K;
    // `\Q…\E` is read by `unquote` before the crate sees it.
    if pattern.contains("\\Q") {
        return None;
    }
    let e = match regex_syntax::ast::parse::Parser::new().parse(pattern) {
        Err(e) => e,
        // The crate takes counts up to 2^32; PCRE stops at 65535.
        Ok(_) => {
            let at = big_count(pattern)?;
            let rest = &pattern[at..];
            return Some(format!(
                "pcre2_compile() failed: number too big in {{}} quantifier in \"{pattern}\" at \"{rest}\""
            ));
        }
    };
    let span = e.span();
    let (start, end) = (span.start.offset, span.end.offset);
    let (text, at): (&str, usize) = match e.kind() {
        K::GroupUnclosed | K::FlagUnexpectedEof => ("missing closing parenthesis", pattern.len()),
        K::GroupUnopened => ("unmatched closing parenthesis", start),
        K::ClassUnclosed => ("missing terminating ] for character class", pattern.len()),
        K::RepetitionMissing => ("quantifier does not follow a repeatable item", start),
        K::ClassRangeInvalid => (
            "range out of order in character class",
            end.saturating_sub(1),
        ),
        K::ClassEscapeInvalid | K::ClassRangeLiteral => ("invalid range in character class", end),
        K::EscapeUnexpectedEof => ("\\ at end of pattern", pattern.len()),
        // `\k<name>` is a back-reference, which PCRE takes: nowait's own
        // message refuses it.
        K::EscapeUnrecognized
            if pattern[start..].starts_with("\\k")
                && !pattern[start + 2..].starts_with(['<', '{', '\'']) =>
        {
            (
                "\\k is not followed by a braced, angle-bracketed, or quoted name",
                end,
            )
        }
        K::EscapeUnrecognized if pattern[start..].starts_with("\\k") => return None,
        K::EscapeUnrecognized => ("unrecognized character follows \\", end.saturating_sub(1)),
        K::FlagUnrecognized => ("unrecognized character after (? or (?-", start),
        K::GroupNameDuplicate { .. } => (
            "two named subpatterns have the same name (PCRE2_DUPNAMES not set)",
            end + 1,
        ),
        K::GroupNameEmpty => ("subpattern name expected", start),
        K::GroupNameInvalid if pattern[start..].starts_with(|c: char| c.is_ascii_digit()) => {
            ("subpattern name must start with a non-digit", start)
        }
        K::GroupNameInvalid | K::GroupNameUnexpectedEof => (
            "syntax error in subpattern name (missing terminator?)",
            pattern.len(),
        ),
        K::RepetitionCountInvalid => (
            "numbers out of order in {} quantifier",
            end.saturating_sub(1),
        ),
        K::DecimalInvalid => (
            "number too big in {} quantifier",
            too_big_at(pattern, start),
        ),
        _ => return None,
    };
    let at = at.min(pattern.len());
    Some(match pattern.get(at..) {
        Some(rest) if !rest.is_empty() => {
            format!("pcre2_compile() failed: {text} in \"{pattern}\" at \"{rest}\"")
        }
        _ => format!("pcre2_compile() failed: {text} in \"{pattern}\""),
    })
}

/// Where PCRE stops reading the first count of `pattern` above 65535, if
/// one is (outside classes, not escaped).
fn big_count(pattern: &str) -> Option<usize> {
    let b = pattern.as_bytes();
    let (mut i, mut in_class) = (0, false);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'[' if !in_class => in_class = true,
            b']' if in_class => in_class = false,
            b'{' if !in_class && is_count(pattern[i + 1..].chars()) => {
                let at = too_big_at(pattern, i + 1);
                if at < pattern.len() {
                    return Some(at);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// Where PCRE stops reading a `{}` count that is too big: after the digit
/// that takes it past 65535.
fn too_big_at(pattern: &str, start: usize) -> usize {
    let mut n: u64 = 0;
    for (i, c) in pattern[start..].char_indices() {
        let Some(d) = c.to_digit(10) else { break };
        n = n * 10 + u64::from(d);
        if n > 65_535 {
            return start + i + 1;
        }
    }
    pattern.len()
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
                    // `\p{Greek}`, `\x{263a}`: the braces are the escape's.
                    None if matches!(n, 'p' | 'P' | 'x') && chars.peek() == Some(&'{') => {
                        out.push('\\');
                        out.push(n);
                        for c in chars.by_ref() {
                            out.push(c);
                            if c == '}' {
                                break;
                            }
                        }
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
            // PCRE (10.42, Debian's) reads `{` as a count only as `{n}`,
            // `{n,}` or `{n,m}`; any other `{` is a literal, which the
            // crate would refuse (`a{,3}`, `/{id}`).
            '{' if !in_class && !is_count(chars.clone()) => out.push_str("\\{"),
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

    /// Each message as nginx 1.22 with PCRE2 10.42 prints it for the same
    /// pattern (checked against Debian's nginx).
    #[test]
    fn syntax_errors_in_pcres_words() {
        for (pattern, said) in [
            ("(", r#"missing closing parenthesis in "(""#),
            ("(?i", r#"missing closing parenthesis in "(?i""#),
            (
                "ab)cd",
                r#"unmatched closing parenthesis in "ab)cd" at ")cd""#,
            ),
            ("[a", r#"missing terminating ] for character class in "[a""#),
            (
                "*",
                r#"quantifier does not follow a repeatable item in "*" at "*""#,
            ),
            (
                "[b-a]x",
                r#"range out of order in character class in "[b-a]x" at "a]x""#,
            ),
            (
                r"[a-\d]",
                r#"invalid range in character class in "[a-\d]" at "]""#,
            ),
            ("\\", r#"\ at end of pattern in "\""#),
            (r"\i", r#"unrecognized character follows \ in "\i" at "i""#),
            (
                r"\k",
                r#"\k is not followed by a braced, angle-bracketed, or quoted name in "\k""#,
            ),
            (
                "(?z)",
                r#"unrecognized character after (? or (?- in "(?z)" at "z)""#,
            ),
            (
                "(?<n>a)(?<n>b)",
                r#"two named subpatterns have the same name (PCRE2_DUPNAMES not set) in "(?<n>a)(?<n>b)" at "b)""#,
            ),
            ("(?<>a)", r#"subpattern name expected in "(?<>a)" at ">a)""#),
            (
                "(?<1a>x)",
                r#"subpattern name must start with a non-digit in "(?<1a>x)" at "1a>x)""#,
            ),
            (
                "(?<a",
                r#"syntax error in subpattern name (missing terminator?) in "(?<a""#,
            ),
            (
                "a{3,2}",
                r#"numbers out of order in {} quantifier in "a{3,2}" at "}""#,
            ),
            (
                "a{99999999}",
                r#"number too big in {} quantifier in "a{99999999}" at "999}""#,
            ),
        ] {
            let e = compile(pattern, false).expect_err(pattern);
            assert_eq!(e, format!("pcre2_compile() failed: {said}"), "{pattern}");
        }
    }

    /// Look-around and back-references, which PCRE has, are compiled by the
    /// backtracking engine; captures and names work the same.
    #[test]
    fn look_around_and_back_references_match_as_in_pcre() {
        let re = compile(r"^/(?!api/|static/)(\w+)", false).unwrap();
        assert!(re.is_match("/page"));
        assert!(!re.is_match("/api/x"));
        assert_eq!(
            re.captures("/page/1"),
            Some(vec![Some((0, 5)), Some((1, 5))])
        );
        let re = compile(r"(?<=\.)(?<ext>jpe?g)$", true).unwrap();
        assert_eq!(re.capture_names(), vec![None, Some("ext")]);
        assert_eq!(re.captures("a.JPG"), Some(vec![Some((2, 5)), Some((2, 5))]));
        assert!(!re.is_match("jpg"));
        let re = compile(r"^(\w)\1$", false).unwrap();
        assert!(re.is_match("aa"));
        assert!(!re.is_match("ab"));
        let re = compile(r"^(?<c>\d)-\k<c>$", false).unwrap();
        assert!(re.is_match("7-7"));
        assert!(!re.is_match("7-8"));
        // `\d` stays ASCII there too.
        assert!(!compile(r"^(?=\d)\d$", false).unwrap().is_match("\u{663}"));
        // An atomic group (`(?>…)`), PCRE's too.
        let re = compile(r"^(?>a+)b$", false).unwrap();
        assert!(re.is_match("aab"));
        // An escape PCRE reads otherwise is not handed over: `\h` is
        // horizontal space in PCRE, a hex digit in the backtracking engine.
        assert!(compile(r"(?=a)\h", false).is_err());
        // A reference to a group that does not exist is still an error.
        assert!(compile(r"(a)\2", false).is_err());
    }

    /// PCRE reads `{` as a count only in `{n}`, `{n,}`, `{n,m}`.
    #[test]
    fn a_brace_that_is_no_count_is_a_literal() {
        let re = compile(r"^/a{,3}/{id}$", false).unwrap();
        assert!(re.is_match("/a{,3}/{id}"));
        let re = compile(r"^x{2}y{1,}z{1,2}$", false).unwrap();
        assert!(re.is_match("xxyzz"));
        let re = compile(r"^\pL[{]\x{41}\p{Lu}$", false).unwrap();
        assert!(re.is_match("a{AB"), "{re:?}");
        let re = compile(r"^{$", false).unwrap();
        assert!(re.is_match("{"));
    }

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
        assert_eq!(
            e,
            "pcre2_compile() failed: missing closing parenthesis in \"^(\""
        );
    }
}
