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

/// The known differences: whole cases by name, and fields excused in every
/// case (a line `field header Allow: reason` excuses a mismatch of any
/// field ending in `header Allow`, in any case).
#[derive(Debug, Default)]
pub struct Known {
    /// Case name → reason.
    pub cases: BTreeMap<String, String>,
    /// (field suffix, reason).
    pub fields: Vec<(String, String)>,
    /// Classes of the request fuzzer's differences (`fuzz CLASS: reason`,
    /// see `differential/fuzz.rs`) → reason.
    pub fuzz: BTreeMap<String, String>,
}

impl Known {
    /// The reason a field's mismatch is expected in every case, if it is.
    pub fn field_reason(&self, field: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(suffix, _)| field.ends_with(suffix.as_str()))
            .map(|(_, reason)| reason.as_str())
    }
}

/// Parses `known-differences.txt`: `case-name: reason`,
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
                if let Some(field) = name.strip_prefix("field ") {
                    known
                        .fields
                        .push((field.trim().to_string(), reason.trim().to_string()));
                } else if let Some(class) = name.strip_prefix("fuzz ") {
                    if known
                        .fuzz
                        .insert(class.trim().to_string(), reason.trim().to_string())
                        .is_some()
                    {
                        errors.push(format!("line {}: {} listed twice", i + 1, name.trim()));
                    }
                } else if known
                    .cases
                    .insert(name.trim().to_string(), reason.trim().to_string())
                    .is_some()
                {
                    errors.push(format!("line {}: {} listed twice", i + 1, name.trim()));
                }
            }
            _ => errors.push(format!("line {}: want `case-name: reason`", i + 1)),
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

    #[test]
    fn unescapes() {
        assert_eq!(
            unescape(r"a\r\n\x41\0\\\{3*ab}").unwrap(),
            b"a\r\nA\0\\ababab"
        );
    }
}
