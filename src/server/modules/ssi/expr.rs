//! Values of SSI parameters: nginx's `ngx_http_ssi_evaluate_string` (`$var`,
//! `${var}`, backslash escapes, the `include` URI's directory prefix), the
//! `if` expression's split into operands (`ngx_http_ssi_if`), and the two
//! encodings of `echo` (`url`: `ngx_escape_uri(…, NGX_ESCAPE_HTML)`;
//! `entity`: `ngx_escape_html`).
//!
//! Pure byte work: variables are looked up through a closure.

/// Prefix a relative value with the directory of the request's URI
/// (`NGX_HTTP_SSI_ADD_PREFIX`, for `include`).
pub const ADD_PREFIX: u8 = 1;

/// Why a value could not be evaluated: nginx's message for the error log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EvalError(pub String);

/// Whether `ch` may be part of a variable name.
fn name_byte(ch: u8) -> bool {
    ch.is_ascii_alphanumeric() || ch == b'_'
}

/// Evaluates `text` as nginx's `ngx_http_ssi_evaluate_string`: variables
/// are replaced by `lookup(lowercased name)` (nothing when not found);
/// `\\`, `\'`, `\"` and `\$` lose their backslash, other escapes keep it;
/// with [`ADD_PREFIX`], a value not starting with `/` gets the directory
/// of `uri` in front.
pub fn evaluate(
    text: &[u8],
    flags: u8,
    uri: &[u8],
    lookup: &mut dyn FnMut(&[u8]) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, EvalError> {
    let prefix_len = if flags & ADD_PREFIX != 0 {
        uri.iter().rposition(|&c| c == b'/').map_or(0, |i| i + 1)
    } else {
        0
    };
    if !text.contains(&b'$') {
        let mut out = Vec::with_capacity(prefix_len + text.len());
        if flags & ADD_PREFIX != 0 && text.first() != Some(&b'/') {
            out.extend_from_slice(&uri[..prefix_len]);
        }
        unquote_into(text, &mut out);
        return Ok(out);
    }
    let mut parts: Vec<Vec<u8>> = Vec::new();
    let mut i = 0;
    while i < text.len() {
        if text[i] == b'$' {
            i += 1;
            if i == text.len() {
                return Err(invalid_variable(text));
            }
            let mut bracket = false;
            if text[i] == b'{' {
                bracket = true;
                i += 1;
                if i == text.len() {
                    return Err(invalid_variable(text));
                }
            }
            let start = i;
            let mut end = i;
            while i < text.len() {
                let ch = text[i];
                if ch == b'}' && bracket {
                    end = i;
                    i += 1;
                    bracket = false;
                    break;
                }
                if name_byte(ch) {
                    i += 1;
                    end = i;
                    continue;
                }
                break;
            }
            if bracket {
                return Err(EvalError(format!(
                    "the closing bracket in \"{}\" variable is missing",
                    String::from_utf8_lossy(&text[start..end])
                )));
            }
            if end == start {
                return Err(invalid_variable(text));
            }
            let name = text[start..end].to_ascii_lowercase();
            if let Some(v) = lookup(&name) {
                parts.push(v);
            }
        } else {
            let start = i;
            let mut end = i;
            let mut quoted = false;
            while end < text.len() {
                let ch = text[end];
                if !quoted && ch == b'$' {
                    break;
                }
                quoted = !quoted && ch == b'\\';
                end += 1;
            }
            let mut part = Vec::with_capacity(end - start);
            unquote_into(&text[start..end], &mut part);
            parts.push(part);
            i = end;
        }
    }
    let mut out = Vec::new();
    if flags & ADD_PREFIX != 0 {
        if let Some(first) = parts.iter().find(|p| !p.is_empty()) {
            if first[0] != b'/' {
                out.extend_from_slice(&uri[..prefix_len]);
            }
        }
    }
    for p in parts {
        out.extend_from_slice(&p);
    }
    Ok(out)
}

/// Copies `text` dropping the backslash of `\\`, `\'`, `\"` and `\$`.
fn unquote_into(text: &[u8], out: &mut Vec<u8>) {
    let mut quoted = false;
    for &ch in text {
        if !quoted {
            if ch == b'\\' {
                quoted = true;
                continue;
            }
        } else {
            quoted = false;
            if !matches!(ch, b'\\' | b'\'' | b'"' | b'$') {
                out.push(b'\\');
            }
        }
        out.push(ch);
    }
}

fn invalid_variable(text: &[u8]) -> EvalError {
    EvalError(format!(
        "invalid variable name in \"{}\"",
        String::from_utf8_lossy(text)
    ))
}

/// What follows an `if` expression's left operand (`ngx_http_ssi_if`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Condition {
    /// Nothing: true when the left operand evaluates to something.
    Truthy,
    /// `= right` or `!= right` (`negative`).
    Compare {
        /// The right operand as written.
        right: Vec<u8>,
        /// `!=`.
        negative: bool,
        /// The right operand was `/regex/` (slashes removed).
        regex: bool,
    },
}

/// Splits an `if` expression as `ngx_http_ssi_if` does: the left operand
/// (lowercased, as nginx does in place) is evaluated before the rest is
/// read, so the rest comes as a `Result` (nginx's "invalid expression").
pub fn condition(expr: &[u8]) -> (Vec<u8>, Result<Condition, EvalError>) {
    let invalid = || {
        EvalError(format!(
            "invalid expression in \"{}\"",
            String::from_utf8_lossy(expr)
        ))
    };
    let last = expr.len();
    let mut p = 0;
    let mut left = Vec::new();
    while p < last {
        let c = expr[p];
        if c.is_ascii_uppercase() {
            left.push(c | 0x20);
        } else if c.is_ascii_lowercase()
            || c.is_ascii_digit()
            || matches!(c, b'$' | b'{' | b'}' | b'_' | b'"' | b'\'')
        {
            left.push(c);
        } else {
            break;
        }
        p += 1;
    }
    while p < last && expr[p] == b' ' {
        p += 1;
    }
    if p == last {
        return (left, Ok(Condition::Truthy));
    }
    let negative = if expr[p] == b'=' {
        p += 1;
        false
    } else if p + 1 < last && expr[p] == b'!' && expr[p + 1] == b'=' {
        p += 2;
        true
    } else {
        return (left, Err(invalid()));
    };
    while p < last && expr[p] == b' ' {
        p += 1;
    }
    let mut end = last;
    let regex = if p + 1 < last && expr[p] == b'/' {
        if expr[last - 1] != b'/' {
            return (left, Err(invalid()));
        }
        end -= 1;
        p += 1;
        true
    } else {
        if p + 1 < last && expr[p] == b'\\' && expr[p + 1] == b'/' {
            p += 1;
        }
        false
    };
    let rest = Condition::Compare {
        right: expr[p..end].to_vec(),
        negative,
        regex,
    };
    (left, Ok(rest))
}

/// What `NGX_ESCAPE_HTML` escapes, one bit per byte value: controls,
/// space, `"`, `#`, `%`, `'`, `<`, `>`, `?`, `\`, `^`, `` ` ``, `{`, `|`,
/// `}`, DEL and every byte above 0x7F.
const ESCAPE_HTML: [u32; 8] = [
    0xffff_ffff,
    0x5000_00ad,
    0x5000_0000,
    0xb800_0001,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
    0xffff_ffff,
];

/// `echo encoding="url"`: `%XX` (uppercase) for what [`ESCAPE_HTML`] names.
pub fn url_encode(src: &[u8]) -> Vec<u8> {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = Vec::with_capacity(src.len());
    for &c in src {
        if ESCAPE_HTML[usize::from(c >> 5)] & (1 << (c & 0x1f)) != 0 {
            out.extend_from_slice(&[b'%', HEX[usize::from(c >> 4)], HEX[usize::from(c & 0xf)]]);
        } else {
            out.push(c);
        }
    }
    out
}

/// `echo encoding="entity"`: `<`, `>`, `&` and `"` as HTML entities.
pub fn entity_encode(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    for &c in src {
        match c {
            b'<' => out.extend_from_slice(b"&lt;"),
            b'>' => out.extend_from_slice(b"&gt;"),
            b'&' => out.extend_from_slice(b"&amp;"),
            b'"' => out.extend_from_slice(b"&quot;"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(text: &str, flags: u8) -> Result<String, EvalError> {
        let mut lookup = |name: &[u8]| match name {
            b"a" => Some(b"AA".to_vec()),
            b"empty" => Some(Vec::new()),
            b"abs" => Some(b"/abs".to_vec()),
            _ => None,
        };
        evaluate(text.as_bytes(), flags, b"/dir/page.html", &mut lookup)
            .map(|v| String::from_utf8(v).unwrap())
    }

    #[test]
    fn variables_and_escapes() {
        assert_eq!(eval("x$a-${A}y$none.", 0).unwrap(), "xAA-AAy.");
        assert_eq!(eval(r#"a\$b\"c\d"#, 0).unwrap(), r#"a$b"c\d"#);
        assert_eq!(eval(r#"$a\$a\x"#, 0).unwrap(), r#"AA$a\x"#);
        assert_eq!(
            eval("x$", 0),
            Err(EvalError("invalid variable name in \"x$\"".into()))
        );
        assert_eq!(
            eval("${a", 0),
            Err(EvalError(
                "the closing bracket in \"a\" variable is missing".into()
            ))
        );
        assert_eq!(
            eval("$-", 0),
            Err(EvalError("invalid variable name in \"$-\"".into()))
        );
    }

    #[test]
    fn include_uris_are_relative_to_the_directory() {
        assert_eq!(eval("x.html", ADD_PREFIX).unwrap(), "/dir/x.html");
        assert_eq!(eval("/x.html", ADD_PREFIX).unwrap(), "/x.html");
        assert_eq!(eval("$a/x", ADD_PREFIX).unwrap(), "/dir/AA/x");
        assert_eq!(eval("$abs/x", ADD_PREFIX).unwrap(), "/abs/x");
        // The first part with something in it decides.
        assert_eq!(eval("$empty$abs", ADD_PREFIX).unwrap(), "/abs");
    }

    #[test]
    fn conditions_split_as_nginx() {
        let cmp = |right: &[u8], negative, regex| {
            Ok(Condition::Compare {
                right: right.to_vec(),
                negative,
                regex,
            })
        };
        assert_eq!(
            condition(b"$ARG_v"),
            (b"$arg_v".to_vec(), Ok(Condition::Truthy))
        );
        assert_eq!(
            condition(b"$a = /re+g/"),
            (b"$a".to_vec(), cmp(b"re+g", false, true))
        );
        assert_eq!(
            condition(b"EQUAL != $v"),
            (b"equal".to_vec(), cmp(b"$v", true, false))
        );
        assert_eq!(
            condition(br"$a = \/x"),
            (b"$a".to_vec(), cmp(b"/x", false, false))
        );
        assert_eq!(
            condition(b"$a = /"),
            (b"$a".to_vec(), cmp(b"/", false, false))
        );
        assert!(condition(b"$a = /x").1.is_err());
        assert!(condition(b"$a.b").1.is_err());
        assert!(condition(b"$a < 1").1.is_err());
    }

    #[test]
    fn encodings() {
        assert_eq!(url_encode(b"<test> a&b"), b"%3Ctest%3E%20a&b");
        assert_eq!(
            entity_encode(b"<a href=\"x\">&"),
            b"&lt;a href=&quot;x&quot;&gt;&amp;"
        );
    }
}
