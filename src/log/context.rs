//! The request context an error-log line ends with (`, client: …, server:
//! …, request: "…", upstream: "…", host: "…"`), built without the
//! formatting machinery.
//!
//! The proxy builds its context for every upstream attempt, before it knows
//! whether a line will be written (the streamed body keeps it for the
//! errors it may meet): through `format!` and `String::from_utf8_lossy` that
//! cost about a tenth of a small proxied request's instructions. Here it is
//! one allocation of the right size and copies; bytes that are not UTF-8
//! are replaced as `from_utf8_lossy` replaces them.

use std::fmt::Write as _;
use std::net::IpAddr;

/// An error-log context being built.
#[derive(Debug, Default)]
pub struct Context {
    /// The text so far.
    text: String,
}

impl Context {
    /// An empty context with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize) -> Context {
        Context {
            text: String::with_capacity(capacity),
        }
    }

    /// Appends `s`.
    pub fn str(&mut self, s: &str) -> &mut Context {
        self.text.push_str(s);
        self
    }

    /// Appends `bytes`, each invalid UTF-8 sequence replaced by U+FFFD.
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut Context {
        push_lossy(&mut self.text, bytes);
        self
    }

    /// Appends an address as nginx writes `client:` (no port).
    pub fn ip(&mut self, ip: IpAddr) -> &mut Context {
        match ip {
            IpAddr::V4(v4) => {
                let mut first = true;
                for octet in v4.octets() {
                    if !first {
                        self.text.push('.');
                    }
                    first = false;
                    push_decimal(&mut self.text, u32::from(octet));
                }
            }
            // Rare enough for the general path.
            IpAddr::V6(v6) => {
                let _ = write!(self.text, "{v6}");
            }
        }
        self
    }

    /// The text built.
    pub fn finish(self) -> String {
        self.text
    }
}

/// Appends `bytes` to `s` as `String::from_utf8_lossy` would render them,
/// without going through a `Cow` when they are valid (the usual case).
pub fn push_lossy(s: &mut String, bytes: &[u8]) {
    match std::str::from_utf8(bytes) {
        Ok(text) => s.push_str(text),
        Err(_) => s.push_str(&String::from_utf8_lossy(bytes)),
    }
}

/// Appends `n` in decimal.
fn push_decimal(s: &mut String, n: u32) {
    let mut digits = [0u8; 10];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &digits[at..] {
        s.push(char::from(d));
    }
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
        let mut s = String::new();
        push_lossy(&mut s, "é/x".as_bytes());
        assert_eq!(s, "é/x");
    }
}
