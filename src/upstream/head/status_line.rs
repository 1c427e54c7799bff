//! The status line of an upstream response, as nginx 1.22.1's
//! `ngx_http_parse_status_line` reads it.
//!
//! Owns: `HTTP/major.minor SP+ ddd [SP|. text] (CRLF|LF)` and where each
//! part is. Must not: judge the status code (any three digits pass) or the
//! version (`HTTP/2.0` passes; only its value < 1.1 matters, to the caller).
//!
//! Unlike `httparse`'s response parser, which knows only HTTP/1.0 and 1.1
//! and wants a reason phrase's bytes to be visible ones, nginx accepts any
//! 1-3 digit major (1-999) and minor, several spaces before the code, a
//! `.` after it (IIS's `403.1`), and any byte in the text but a CR that
//! is not followed by LF. A byte that breaks these rules makes the whole
//! answer "no valid HTTP/1.0 header", as soon as it is seen.

use std::ops::Range;

/// The most a version number may be: nginx refuses a fourth digit.
const MAX_VERSION_NUMBER: u16 = 999;
/// How many digits a status code has.
const STATUS_DIGITS: usize = 3;

/// A complete status line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct StatusLine {
    /// `(major, minor)`.
    pub version: (u16, u16),
    /// The three-digit code.
    pub status: u16,
    /// Where nginx's `status_line` is: from the code to the line's end,
    /// CR and LF excluded.
    pub text: Range<usize>,
    /// The line's length, LF included.
    pub len: usize,
}

/// What the start of a buffer holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Parsed {
    /// A valid beginning; more bytes needed.
    Partial,
    /// Not an HTTP/1.x status line (nginx's `NGX_ERROR`).
    Invalid,
    /// A complete line.
    Line(StatusLine),
}

/// The states of `ngx_http_parse_status_line`, after `HTTP/`.
#[derive(Clone, Copy)]
enum State {
    FirstMajorDigit,
    MajorDigit,
    FirstMinorDigit,
    MinorDigit,
    Status,
    SpaceAfterStatus,
    StatusText,
    AlmostDone,
}

/// Parses the status line at the start of `buf`.
pub(super) fn parse(buf: &[u8]) -> Parsed {
    const PREFIX: &[u8] = b"HTTP/";
    let seen = buf.len().min(PREFIX.len());
    if buf[..seen] != PREFIX[..seen] {
        return Parsed::Invalid;
    }
    let (mut major, mut minor, mut status, mut digits) = (0u16, 0u16, 0u16, 0);
    let mut start = 0;
    let mut state = State::FirstMajorDigit;
    for (p, &ch) in buf.iter().enumerate().skip(PREFIX.len()) {
        let digit = ch.wrapping_sub(b'0');
        let is_digit = digit <= 9;
        state = match state {
            State::FirstMajorDigit if (b'1'..=b'9').contains(&ch) => {
                major = u16::from(digit);
                State::MajorDigit
            }
            State::MajorDigit if ch == b'.' => State::FirstMinorDigit,
            State::MajorDigit if is_digit && major * 10 <= MAX_VERSION_NUMBER => {
                major = major * 10 + u16::from(digit);
                State::MajorDigit
            }
            State::FirstMinorDigit if is_digit => {
                minor = u16::from(digit);
                State::MinorDigit
            }
            State::MinorDigit if ch == b' ' => State::Status,
            State::MinorDigit if is_digit && minor * 10 <= MAX_VERSION_NUMBER => {
                minor = minor * 10 + u16::from(digit);
                State::MinorDigit
            }
            State::Status if ch == b' ' => State::Status,
            State::Status if is_digit => {
                status = status * 10 + u16::from(digit);
                digits += 1;
                if digits == STATUS_DIGITS {
                    start = p + 1 - STATUS_DIGITS;
                    State::SpaceAfterStatus
                } else {
                    State::Status
                }
            }
            State::SpaceAfterStatus | State::StatusText if ch == b'\r' => State::AlmostDone,
            State::SpaceAfterStatus | State::StatusText if ch == b'\n' => {
                return done(major, minor, status, start..p, p);
            }
            // IIS may send `403.1`, `403.2`…
            State::SpaceAfterStatus if ch == b' ' || ch == b'.' => State::StatusText,
            State::StatusText => State::StatusText,
            State::AlmostDone if ch == b'\n' => {
                // nginx: `status->end = p - 1`, the CR.
                return done(major, minor, status, start..p - 1, p);
            }
            _ => return Parsed::Invalid,
        };
    }
    Parsed::Partial
}

/// The line ending with the LF at `lf`.
fn done(major: u16, minor: u16, status: u16, text: Range<usize>, lf: usize) -> Parsed {
    Parsed::Line(StatusLine {
        version: (major, minor),
        status,
        text,
        len: lf + 1,
    })
}
