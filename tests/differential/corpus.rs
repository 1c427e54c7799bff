//! Reads `corpus.txt` (the requests) and `known-differences.txt`.
//!
//! Corpus syntax, one case per block:
//!
//! ```text
//! # comment
//! === case-name
//! @methods GET HEAD        optional: the request methods in order, when
//!                          the automatic split of the bytes gets them wrong
//! GET / HTTP/1.1\r\n       request bytes; the file's own line breaks and
//! Host: localhost\r\n      trailing blanks are not part of them
//! \r\n
//! ---                      send what came before, wait for one response,
//!                          then send the rest (a keep-alive sequence)
//! ```
//!
//! Escapes: `\r \n \t \0 \\ \xHH`, and `\{N*TEXT}` for TEXT repeated N
//! times (`\{5000*a}`).

use std::collections::BTreeMap;

/// One request case.
#[derive(Debug)]
pub struct Case {
    /// Unique name, used in reports and in `known-differences.txt`.
    pub name: String,
    /// Line of its `===` in the corpus, for error messages.
    pub line: usize,
    /// Byte segments, each sent in one write.
    pub segments: Vec<Vec<u8>>,
    /// The methods of the requests in order; `None`: detect from bytes.
    pub methods: Option<Vec<String>>,
}

/// Parses the corpus text; `Err` lists every problem with its line.
pub fn parse_corpus(text: &str) -> Result<Vec<Case>, Vec<String>> {
    let mut cases: Vec<Case> = Vec::new();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let n = i + 1;
        let line = raw.trim_end();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(name) = line.strip_prefix("===") {
            let name = name.trim();
            if name.is_empty() || name.contains(char::is_whitespace) || name.contains(':') {
                errors.push(format!("line {n}: bad case name {name:?}"));
            }
            if let Some(prev) = cases.iter().find(|c| c.name == name) {
                errors.push(format!(
                    "line {n}: case {name} already at line {}",
                    prev.line
                ));
            }
            cases.push(Case {
                name: name.to_string(),
                line: n,
                segments: vec![Vec::new()],
                methods: None,
            });
            continue;
        }
        let Some(case) = cases.last_mut() else {
            errors.push(format!("line {n}: data before the first === case"));
            continue;
        };
        if let Some(methods) = line.strip_prefix("@methods") {
            case.methods = Some(methods.split_whitespace().map(str::to_string).collect());
        } else if line == "---" {
            case.segments.push(Vec::new());
        } else {
            match unescape(line) {
                Ok(bytes) => case.segments.last_mut().unwrap().extend(bytes),
                Err(e) => errors.push(format!("line {n}: {e}")),
            }
        }
    }
    for case in &cases {
        if case.segments.iter().any(Vec::is_empty) {
            errors.push(format!(
                "line {}: case {} has an empty segment",
                case.line, case.name
            ));
        }
    }
    if errors.is_empty() {
        Ok(cases)
    } else {
        Err(errors)
    }
}

/// Decodes the escapes listed in the module header.
fn unescape(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
            continue;
        }
        let esc = *b.get(i + 1).ok_or("backslash at end of line")?;
        i += 2;
        match esc {
            b'r' => out.push(b'\r'),
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'0' => out.push(0),
            b'\\' => out.push(b'\\'),
            b'x' => {
                let hex = s.get(i..i + 2).ok_or("\\x needs two hex digits")?;
                out.push(u8::from_str_radix(hex, 16).map_err(|_| format!("bad \\x{hex}"))?);
                i += 2;
            }
            b'{' => {
                let end = s[i..].find('}').ok_or("unclosed \\{")? + i;
                let (count, text) = s[i..end].split_once('*').ok_or("\\{ needs N*TEXT")?;
                let count: usize = count.parse().map_err(|_| format!("bad count {count:?}"))?;
                out.extend(unescape(text)?.repeat(count));
                i = end + 1;
            }
            other => return Err(format!("unknown escape \\{}", other as char)),
        }
    }
    Ok(out)
}

/// The known differences: cases by name, each with the fields it excuses,
/// and fields excused in every case (a line `field header Allow: reason`
/// excuses a mismatch of `header Allow` in any response of any case).
#[derive(Debug, Default)]
pub struct Known {
    /// Case name → the fields it excuses and why.
    pub cases: BTreeMap<String, KnownCase>,
    /// (field, reason), for every case.
    pub fields: Vec<(String, String)>,
    /// Classes of the request fuzzer's differences (`fuzz CLASS: reason`,
    /// see `differential/fuzz.rs`) → reason. A class names the fields that
    /// differ, so a class excuses only those.
    pub fuzz: BTreeMap<String, String>,
}

/// One case's entry: `case-name [field, field]: reason`.
#[derive(Debug, Default, PartialEq)]
pub struct KnownCase {
    /// The fields whose mismatches the reason explains (see
    /// [`field_matches`]); a mismatch of any other field still fails.
    pub fields: Vec<String>,
    /// Why nowait differs there.
    pub reason: String,
}

/// Whether a mismatch's `field` (as `compare` names it: `response 2 header
/// Connection`, `connection closed`) is the one a list `named`: the same,
/// or `named` in any response (`header Connection`, `body`).
pub fn field_matches(named: &str, field: &str) -> bool {
    if field == named {
        return true;
    }
    field
        .strip_prefix("response ")
        .and_then(|rest| rest.split_once(' '))
        .is_some_and(|(n, rest)| n.parse::<usize>().is_ok() && rest == named)
}

impl Known {
    /// The reason a field's mismatch is expected in every case, if it is.
    pub fn field_reason(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(named, _)| field_matches(named, field))
            .map(|(_, reason)| reason.as_str())
    }

    /// Those of `fields` (a case's mismatches) that `case`'s entry does not
    /// name: the mismatches that fail the case, listed or not.
    pub fn not_named<'a>(&self, case: &str, fields: &[&'a str]) -> Vec<&'a str> {
        let named = self.cases.get(case).map_or(&[][..], |k| &k.fields[..]);
        fields
            .iter()
            .copied()
            .filter(|f| !named.iter().any(|n| field_matches(n, f)))
            .collect()
    }

    /// Those of `fields` that neither `case`'s entry nor a `field` line
    /// excuses.
    pub fn unexcused<'a>(&self, case: &str, fields: &[&'a str]) -> Vec<&'a str> {
        self.not_named(case, fields)
            .into_iter()
            .filter(|f| self.field_reason(f).is_none())
            .collect()
    }
}

/// Splits `case-name [field, field]` into the name and the fields.
fn case_and_fields(head: &str) -> Result<(String, Vec<String>), String> {
    let (name, rest) = head
        .split_once('[')
        .ok_or("name the fields the case excuses: `case-name [header Connection]: reason`")?;
    let fields = rest
        .trim()
        .strip_suffix(']')
        .ok_or("the field list has no closing `]`")?;
    let fields: Vec<String> = fields
        .split(',')
        .map(|f| f.trim().to_string())
        .filter(|f| !f.is_empty())
        .collect();
    if fields.is_empty() {
        return Err("the field list is empty".into());
    }
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) {
        return Err(format!("bad case name {name:?}"));
    }
    Ok((name.to_string(), fields))
}

/// Parses `known-differences.txt`: `case-name [field, ...]: reason`,
/// `field FIELD: reason` and `fuzz CLASS: reason` lines, `#` comments.
pub fn parse_known(text: &str) -> Result<Known, Vec<String>> {
    let mut known = Known::default();
    let mut errors = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match line.split_once(':') {
            Some((name, reason)) if !reason.trim().is_empty() => {
                let reason = reason.trim().to_string();
                if let Some(field) = name.strip_prefix("field ") {
                    known.fields.push((field.trim().to_string(), reason));
                } else if let Some(class) = name.strip_prefix("fuzz ") {
                    if known
                        .fuzz
                        .insert(class.trim().to_string(), reason)
                        .is_some()
                    {
                        errors.push(format!("line {}: {} listed twice", i + 1, name.trim()));
                    }
                } else {
                    match case_and_fields(name) {
                        Ok((case, fields)) => {
                            if known
                                .cases
                                .insert(case.clone(), KnownCase { fields, reason })
                                .is_some()
                            {
                                errors.push(format!("line {}: {case} listed twice", i + 1));
                            }
                        }
                        Err(e) => errors.push(format!("line {}: {e}", i + 1)),
                    }
                }
            }
            _ => errors.push(format!(
                "line {}: want `case-name [field, ...]: reason`",
                i + 1
            )),
        }
    }
    if errors.is_empty() {
        Ok(known)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KNOWN: &str = "# a comment\n\
        case-a [header Connection]: nginx says keep-alive and closes\n\
        case-b [response count, body]: two reasons\n\
        field header Allow: nowait sends Allow with a 405\n";

    #[test]
    fn a_case_excuses_only_the_fields_it_names() {
        let known = parse_known(KNOWN).unwrap();
        let connection = "response 1 header Connection";
        let body = "response 1 body";
        assert!(known.unexcused("case-a", &[connection]).is_empty());
        assert!(
            known
                .unexcused("case-a", &["response 3 header Connection"])
                .is_empty(),
            "a field without its response is named in every response"
        );
        assert_eq!(
            known.unexcused("case-a", &[connection, body]),
            vec![body],
            "a field the entry does not name still fails the case"
        );
        assert_eq!(
            known.unexcused("case-a", &["connection closed"]),
            vec!["connection closed"]
        );
        assert_eq!(known.unexcused("case-c", &[connection]), vec![connection]);
        assert!(
            known
                .unexcused("case-b", &["response count", body])
                .is_empty()
        );
        assert_eq!(
            known.unexcused("case-b", &["response 1 header Content-Length"]),
            vec!["response 1 header Content-Length"]
        );
        // `field` lines excuse their field in any case; `not_named` leaves
        // them out.
        let allow = "response 2 header Allow";
        assert!(known.unexcused("case-c", &[allow]).is_empty());
        assert_eq!(known.not_named("case-c", &[allow]), vec![allow]);
        // A field name is matched whole, not as a suffix.
        assert!(!field_matches(
            "header Connection",
            "response 1 header X-Connection"
        ));
        assert!(!field_matches("body", "response x body"));
    }

    #[test]
    fn an_entry_must_name_its_fields() {
        for bad in [
            "case-a: no fields\n",
            "case-a []: none\n",
            "case-a [header Connection: unclosed\n",
            "two words [body]: a name with a space\n",
            "case-a [body]: one\ncase-a [body]: twice\n",
        ] {
            assert!(parse_known(bad).is_err(), "{bad:?} is refused");
        }
        let known = parse_known(KNOWN).unwrap();
        assert_eq!(
            known.cases["case-b"],
            KnownCase {
                fields: vec!["response count".into(), "body".into()],
                reason: "two reasons".into()
            }
        );
    }

    #[test]
    fn unescapes() {
        assert_eq!(
            unescape(r"a\r\n\x41\0\\\{3*ab}").unwrap(),
            b"a\r\nA\0\\ababab"
        );
    }
}
