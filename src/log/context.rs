//! The request context an error-log line ends with (`, client: …, server:
//! …, request: "…", upstream: "…", host: "…"`), built without the
//! formatting machinery.
//!
//! The proxy builds its context for every upstream attempt, before it knows
//! whether a line will be written (the streamed body keeps it for the
//! errors it may meet): through `format!` and `String::from_utf8_lossy` that
//! cost about a tenth of a small proxied request's instructions. Here it is
//! one allocation of the right size and copies. The bytes are kept as they
//! came: those that are not UTF-8 are replaced (as `from_utf8_lossy`
//! replaces them) only when a line is written ([`LogText`]), so the
//! context of a request that logs nothing is never validated.

use std::io::Write as _;
use std::net::IpAddr;

/// An error-log context being built.
#[derive(Debug, Default)]
pub struct Context {
    text: Vec<u8>,
}

impl Context {
    /// An empty context with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Context {
        Context {
            text: Vec::with_capacity(capacity),
        }
    }

    /// Appends `s`.
    pub fn str(&mut self, s: &str) -> &mut Context {
        self.text.extend_from_slice(s.as_bytes());
        self
    }

    /// Appends `bytes` as they are (made text when written).
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Context {
        self.text.extend_from_slice(bytes);
        self
    }

    /// Appends `ip` as `Display` writes it.
    pub fn ip(&mut self, ip: IpAddr) -> &mut Context {
        match ip {
            IpAddr::V4(v4) => {
                let mut first = true;
                for octet in v4.octets() {
                    if !first {
                        self.text.push(b'.');
                    }
                    first = false;
                    push_decimal(&mut self.text, u32::from(octet));
                }
            }
            IpAddr::V6(v6) => {
                let _ = write!(self.text, "{v6}");
            }
        }
        self
    }

    /// The text, each invalid UTF-8 sequence replaced by U+FFFD.
    pub fn finish(self) -> String {
        match String::from_utf8(self.text) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }

    /// The bytes, made text only when displayed.
    pub fn finish_lazy(self) -> LogText {
        LogText(self.text)
    }
}

/// A context suffix kept as bytes: displaying it replaces each invalid
/// UTF-8 sequence by U+FFFD, as `from_utf8_lossy` does.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogText(Vec<u8>);

impl std::fmt::Display for LogText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for chunk in self.0.utf8_chunks() {
            f.write_str(chunk.valid())?;
            if !chunk.invalid().is_empty() {
                f.write_str("\u{FFFD}")?;
            }
        }
        Ok(())
    }
}

fn push_decimal(s: &mut Vec<u8>, n: u32) {
    crate::http::decimal::push_decimal(s, u64::from(n));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_as_format_does() {
        for ip in [
            "127.0.0.1",
            "0.0.0.0",
            "255.255.255.255",
            "10.20.3.4",
            "::1",
            "fe80::1:2",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            let mut c = Context::default();
            c.ip(ip);
            assert_eq!(c.finish(), ip.to_string());
        }
        let mut c = Context::with_capacity(4);
        c.str(", host: \"").bytes(b"a\xffb").str("\"");
        assert_eq!(c.finish(), ", host: \"a\u{fffd}b\"");
        // Displayed lazily, the same replacement as `from_utf8_lossy`.
        for bytes in [&b"a\xffb\xe2\x82"[..], b"\xf0\x9f\x98\x80 ok", b"\xc3"] {
            let mut c = Context::default();
            c.bytes(bytes);
            assert_eq!(c.finish_lazy().to_string(), String::from_utf8_lossy(bytes));
        }
    }
}
