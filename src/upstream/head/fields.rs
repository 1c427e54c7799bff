//! The header section of an upstream response: field lines up to the
//! blank line, as nginx 1.22.1's `ngx_http_parse_header_line` reads them
//! for an upstream (`allow_underscores` = 1, `invalid_header` not checked
//! by `ngx_http_proxy_process_header`).
//!
//! Owns: splitting the section into fields and nginx's refusals.
//! Must not: interpret any field (the head does).
//!
//! `httparse` parses the section first: what it accepts, nginx accepts
//! too, with the same fields, as long as the section holds no tab. Where
//! they part, nginx's own state machine ([`parse_line`]) decides:
//! - nginx is more lenient: names with any byte above space but DEL and
//!   `:` (`_`, `@`, `/`, UTF-8), a line without a colon (a field with an
//!   empty value), a repeated `HTTP/...` status line (skipped: IIS), control
//!   bytes but NUL in values, `CR CR LF` as a line end;
//! - nginx trims only spaces around a value, not tabs (`httparse` trims
//!   both): a section with a tab is always parsed by the state machine;
//! - both refuse NUL, a lone CR, whitespace at a line's start (obsolete
//!   folding) or before the colon; the state machine gives nginx's message.

use super::{HeadError, Headers};

/// Fields `httparse` gets room for; a head with more goes to the state
/// machine, which has no count limit (nginx has none: `proxy_buffer_size`
/// bounds a head).
const FAST_FIELDS: usize = 32;

/// Parses the header section at the start of `buf` into `headers`:
/// `Some(len)` with the section's length (blank line included), `None`
/// while it is incomplete. nginx refuses a bad byte as soon as it is seen.
pub(super) fn parse_section(buf: &[u8], headers: &mut Headers) -> Result<Option<usize>, HeadError> {
    let mut slots = [httparse::EMPTY_HEADER; FAST_FIELDS];
    match httparse::parse_headers(buf, &mut slots) {
        Ok(httparse::Status::Complete((len, fields)))
            if memchr::memchr(b'\t', &buf[..len]).is_none() =>
        {
            // The section copied at once, not field by field.
            match Headers::from_section(&buf[..len], fields) {
                Some(list) => {
                    *headers = list;
                    Ok(Some(len))
                }
                None => parse_section_nginx(buf, headers),
            }
        }
        // A prefix httparse accepts is one nginx accepts.
        Ok(httparse::Status::Partial) => Ok(None),
        _ => parse_section_nginx(buf, headers),
    }
}

/// [`parse_section`] by nginx's state machine alone.
pub(super) fn parse_section_nginx(
    buf: &[u8],
    headers: &mut Headers,
) -> Result<Option<usize>, HeadError> {
    let mut pos = 0;
    loop {
        match parse_line(buf, pos) {
            Line::Field { name, value, next } => {
                headers.push(&buf[name.0..name.1], &buf[value.0..value.1]);
                pos = next;
            }
            Line::Ignored { next } => pos = next,
            Line::End { next } => return Ok(Some(next)),
            Line::Partial => return Ok(None),
            Line::Invalid { end } => {
                return Err(HeadError::InvalidHeader {
                    text: buf[pos..end].to_vec(),
                    byte: buf[end],
                });
            }
        }
    }
}

/// One line of the section, positions relative to the buffer.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Line {
    /// A field: `name` and `value` as `(start, end)`; the next line at `next`.
    Field {
        name: (usize, usize),
        value: (usize, usize),
        next: usize,
    },
    /// A line nginx skips (a repeated status line); the next at `next`.
    Ignored { next: usize },
    /// The blank line ending the section; the body at `next`.
    End { next: usize },
    /// The line is not complete.
    Partial,
    /// nginx's `NGX_HTTP_PARSE_INVALID_HEADER`; it logs the line from its
    /// start to `end` and the byte at `end` (its `header_end`).
    Invalid { end: usize },
}

/// The states of `ngx_http_parse_header_line`.
#[derive(Clone, Copy)]
enum State {
    Start,
    Name,
    SpaceBeforeValue,
    Value,
    SpaceAfterValue,
    IgnoreLine,
    AlmostDone,
    HeaderAlmostDone,
}

/// Parses the line starting at `start`, byte by byte as nginx does.
pub(super) fn parse_line(buf: &[u8], start: usize) -> Line {
    let mut state = State::Start;
    // nginx's header_name_end, header_start, header_end.
    let (mut name_end, mut value_start, mut header_end) = (start, start, start);
    for (p, &ch) in buf.iter().enumerate().skip(start) {
        let field = |name_end, value_start, value_end| Line::Field {
            name: (start, name_end),
            value: (value_start, value_end),
            next: p + 1,
        };
        state = match state {
            State::Start => match ch {
                b'\r' => {
                    header_end = p;
                    State::HeaderAlmostDone
                }
                b'\n' => return Line::End { next: p + 1 },
                // Obsolete folding, a control byte, an empty name.
                c if c <= b' ' || c == 0x7f || c == b':' => return Line::Invalid { end: p },
                _ => State::Name,
            },
            State::Name => match ch {
                b':' => {
                    name_end = p;
                    State::SpaceBeforeValue
                }
                // A line without a colon: a field with an empty value.
                b'\r' => {
                    (name_end, value_start, header_end) = (p, p, p);
                    State::AlmostDone
                }
                b'\n' => return field(p, p, p),
                // IIS may send the duplicate "HTTP/1.1 ..." lines.
                b'/' if &buf[start..p] == b"HTTP" => State::IgnoreLine,
                c if c <= b' ' || c == 0x7f => return Line::Invalid { end: p },
                _ => State::Name,
            },
            State::SpaceBeforeValue => match ch {
                b' ' => State::SpaceBeforeValue,
                b'\r' => {
                    (value_start, header_end) = (p, p);
                    State::AlmostDone
                }
                b'\n' => return field(name_end, p, p),
                0 => return Line::Invalid { end: p },
                _ => {
                    value_start = p;
                    State::Value
                }
            },
            State::Value => match ch {
                b' ' => {
                    header_end = p;
                    State::SpaceAfterValue
                }
                b'\r' => {
                    header_end = p;
                    State::AlmostDone
                }
                b'\n' => return field(name_end, value_start, p),
                0 => return Line::Invalid { end: p },
                _ => State::Value,
            },
            State::SpaceAfterValue => match ch {
                b' ' => State::SpaceAfterValue,
                b'\r' => State::AlmostDone,
                b'\n' => return field(name_end, value_start, header_end),
                0 => return Line::Invalid { end: p },
                _ => State::Value,
            },
            State::IgnoreLine => match ch {
                b'\n' => return Line::Ignored { next: p + 1 },
                _ => State::IgnoreLine,
            },
            State::AlmostDone => match ch {
                b'\n' => return field(name_end, value_start, header_end),
                b'\r' => State::AlmostDone,
                // nginx does not move header_end here: it shows the byte
                // where the value ended (the CR, or the first trailing
                // space), not the one after the CR.
                _ => return Line::Invalid { end: header_end },
            },
            State::HeaderAlmostDone => match ch {
                b'\n' => return Line::End { next: p + 1 },
                _ => return Line::Invalid { end: header_end },
            },
        };
    }
    Line::Partial
}
