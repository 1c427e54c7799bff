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
//! they part, nginx's own state machine decides
//! ([`crate::http::head_scan::upstream_header_line`], the one clients' lines
//! go through too):
//! - nginx is more lenient: names with any byte above space but DEL and
//!   `:` (`_`, `@`, `/`, UTF-8), a line without a colon (a field with an
//!   empty value), a repeated `HTTP/...` status line (skipped: IIS), control
//!   bytes but NUL in values, `CR CR LF` as a line end;
//! - nginx trims only spaces around a value, not tabs (`httparse` trims
//!   both): a section with a tab is always parsed by the state machine;
//! - both refuse NUL, a lone CR, whitespace at a line's start (obsolete
//!   folding) or before the colon; the state machine gives nginx's message.

use super::{HeadError, Headers};
use crate::http::head_scan::{HeaderLine, upstream_header_line};

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
        match upstream_header_line(buf, pos) {
            // nginx's proxy module does not check `invalid_header`.
            HeaderLine::Field {
                name, value, next, ..
            } => {
                headers.push(&buf[name.0..name.1], &buf[value.0..value.1]);
                pos = next;
            }
            HeaderLine::Ignored { next } => pos = next,
            HeaderLine::End { next } => return Ok(Some(next)),
            HeaderLine::Partial => return Ok(None),
            HeaderLine::Invalid { end } => {
                return Err(HeadError::InvalidHeader {
                    text: buf[pos..end].to_vec(),
                    byte: buf[end],
                });
            }
        }
    }
}
