//! Compares what two servers sent back for one case, after normalizing what
//! may legitimately differ: the server's name and version in default error
//! pages, the multipart boundary, and each server's own port in `Location`.

use crate::common::Exchange;
use crate::common::response::{Parsed, Response, parse_responses};

/// Header fields compared whenever either server sends them.
pub const COMPARED_HEADERS: &[&str] = &[
    "Content-Length",
    "Content-Range",
    "Content-Type",
    "ETag",
    "Last-Modified",
    "Location",
    "Allow",
    "Connection",
    "Accept-Ranges",
    "Transfer-Encoding",
    // Set by add_header in the test configuration.
    "X-A",
    "X-Image",
];

/// Longest value printed in a report; the rest is elided.
const SHOW_MAX: usize = 300;

/// What one server did with one case.
pub struct Outcome {
    /// The responses, normalized.
    pub parsed: Parsed,
    /// Whether the server closed the connection.
    pub closed: bool,
}

impl Outcome {
    /// Parses and normalizes an exchange with the server on `port`.
    pub fn new(exchange: &Exchange, methods: &[String], port: u16) -> Outcome {
        let mut parsed = parse_responses(&exchange.bytes, methods, exchange.closed);
        for r in &mut parsed.responses {
            normalize(r, port);
        }
        parsed.rest = server_tokens(&parsed.rest);
        Outcome {
            parsed,
            closed: exchange.closed,
        }
    }

    /// One line for verbose reports: statuses, body sizes, close.
    pub fn summary(&self) -> String {
        let mut parts: Vec<String> = self
            .parsed
            .responses
            .iter()
            .map(|r| format!("{} ({} B)", r.status, r.body.len()))
            .collect();
        if let Some(e) = &self.parsed.error {
            parts.push(format!("error: {e}"));
        }
        parts.push(if self.closed { "closed" } else { "open" }.to_string());
        parts.join(", ")
    }

    /// The normalized heads, for verbose reports.
    pub fn heads(&self) -> String {
        let mut out = String::new();
        for r in &self.parsed.responses {
            out.push_str(&format!("        {}\n", r.status_line));
            for (n, v) in &r.headers {
                out.push_str(&format!("        {n}: {v}\n"));
            }
        }
        out
    }
}

/// One field that differs.
pub struct Mismatch {
    /// What differs, e.g. `response 1 header ETag`.
    pub field: String,
    /// The reference (nginx) value.
    pub reference: String,
    /// The tested server's value.
    pub tested: String,
}

/// Every difference between the reference and the tested outcome.
pub fn compare(reference: &Outcome, tested: &Outcome) -> Vec<Mismatch> {
    let mut out = Vec::new();
    let mut diff = |field: String, a: String, b: String| {
        if a != b {
            out.push(Mismatch {
                field,
                reference: a,
                tested: b,
            });
        }
    };
    let (a, b) = (&reference.parsed, &tested.parsed);
    diff(
        "response count".into(),
        a.responses.len().to_string(),
        b.responses.len().to_string(),
    );
    for (i, (ra, rb)) in a.responses.iter().zip(&b.responses).enumerate() {
        let n = i + 1;
        diff(
            format!("response {n} status line"),
            ra.status_line.clone(),
            rb.status_line.clone(),
        );
        for h in COMPARED_HEADERS {
            diff(
                format!("response {n} header {h}"),
                show_opt(ra.header(h)),
                show_opt(rb.header(h)),
            );
        }
        diff(
            format!("response {n} body"),
            show_bytes(&ra.body, &rb.body),
            show_bytes(&rb.body, &ra.body),
        );
    }
    diff(
        "parse error".into(),
        show_opt(a.error.clone()),
        show_opt(b.error.clone()),
    );
    diff(
        "unparsed bytes".into(),
        show_bytes(&a.rest, &b.rest),
        show_bytes(&b.rest, &a.rest),
    );
    diff(
        "connection closed".into(),
        reference.closed.to_string(),
        tested.closed.to_string(),
    );
    out
}

/// Replaces what may differ between servers with fixed tokens.
fn normalize(r: &mut Response, port: u16) {
    let boundary = r
        .header("Content-Type")
        .and_then(|ct| ct.split_once("boundary=").map(|(_, b)| b.to_string()));
    if let Some(boundary) = boundary.filter(|b| !b.is_empty()) {
        r.body = replace(&r.body, boundary.as_bytes(), b"BOUNDARY");
        for (_, v) in &mut r.headers {
            *v = v.replace(&boundary, "BOUNDARY");
        }
    }
    let own = format!(":{port}");
    for (name, v) in &mut r.headers {
        if name.eq_ignore_ascii_case("Location") {
            *v = v.replace(&own, ":PORT");
        }
    }
    let raw_len = r.body.len();
    r.body = server_tokens(&r.body);
    // An error page's length depends on the server's version string;
    // compare the length of the normalized body instead, when the header
    // was right about the raw one. (A HEAD response carries no body to
    // measure: there the two tokens, "nginx/1.22.1" and "nowait/0.1.0",
    // happen to be the same length.)
    if r.body.len() != raw_len {
        for (name, v) in &mut r.headers {
            if name.eq_ignore_ascii_case("Content-Length") && *v == raw_len.to_string() {
                *v = r.body.len().to_string();
            }
        }
    }
}

/// `nginx/1.22.1`, `nowait/0.1.0`, `nginx`, `nowait` → `SERVER`.
fn server_tokens(b: &[u8]) -> Vec<u8> {
    let mut out = b.to_vec();
    for name in [&b"nginx"[..], b"nowait"] {
        let mut versioned = name.to_vec();
        versioned.push(b'/');
        out = replace_with_version(&out, &versioned);
        out = replace(&out, name, b"SERVER");
    }
    out
}

/// Replaces `prefix` followed by a version (`[0-9.]*`) with `SERVER`.
fn replace_with_version(b: &[u8], prefix: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(prefix) {
            i += prefix.len();
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            out.extend_from_slice(b"SERVER");
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

fn replace(b: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    if from.is_empty() {
        return b.to_vec();
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    out
}

/// `b` for a report; when it differs from `other` beyond what [`show`]
/// prints, the first differing offset is added so that the two differ.
fn show_bytes(b: &[u8], other: &[u8]) -> String {
    let shown = show(b);
    if b == other || shown != show(other) {
        return shown;
    }
    let at = b.iter().zip(other).take_while(|(x, y)| x == y).count();
    format!(
        "{shown}, first difference at byte {at}: {}",
        show(&b[at..b.len().min(at + 32)])
    )
}

fn show_opt(v: Option<String>) -> String {
    v.map_or_else(|| "(absent)".to_string(), |v| format!("{v:?}"))
}

/// Bytes as an escaped string, long ones elided with their length.
pub fn show(b: &[u8]) -> String {
    let s = b.escape_ascii().to_string();
    if s.len() <= SHOW_MAX {
        format!("\"{s}\"")
    } else {
        let mut cut = SHOW_MAX;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        format!("\"{}\"... ({} bytes)", &s[..cut], b.len())
    }
}
