//! FastCGI 1.0 records as nginx 1.22.1 writes and reads them: the request
//! (`ngx_http_fastcgi_create_request`: BEGIN_REQUEST, one PARAMS record,
//! the empty PARAMS, STDIN records of at most 32 KiB, the empty STDIN) and
//! an incremental parser of the records an application sends back
//! (`ngx_http_fastcgi_process_record` and the record walk of
//! `ngx_http_fastcgi_input_filter`). Pure and I/O-free: the upstream engine
//! owns the socket, the buffers and what a record means for the response.
//!
//! As nginx, one request per connection with request id 1.

use std::fmt;
use std::ops::Range;

/// The protocol version nginx writes and the only one it accepts.
pub const VERSION: u8 = 1;
/// The request id: nginx runs a single request per connection.
pub const REQUEST_ID: u16 = 1;
/// The length of a record header (`ngx_http_fastcgi_header_t`).
pub const HEADER_LEN: usize = 8;
/// The largest content one record can carry (16-bit length).
pub const MAX_CONTENT: usize = 0xffff;
/// How much request body nginx puts into one STDIN record.
pub const BODY_CHUNK: usize = 32 * 1024;
/// The RESPONDER role of BEGIN_REQUEST.
pub const ROLE_RESPONDER: u16 = 1;
/// The BEGIN_REQUEST flag asking the application to keep the connection.
pub const FLAG_KEEP_CONN: u8 = 1;
/// The longest name or value length the 1-byte length encoding holds.
const SHORT_LEN_MAX: usize = 127;
/// Record content is padded to a multiple of this.
const ALIGN: usize = 8;
/// The length of END_REQUEST's content (app status, protocol status,
/// 3 reserved bytes).
const END_REQUEST_LEN: usize = 8;

/// The record types of FastCGI 1.0 that nginx names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordType {
    /// Starts a request (web server → application).
    BeginRequest = 1,
    /// Aborts a request (web server → application; nginx never sends it).
    AbortRequest = 2,
    /// Ends a request (application → web server).
    EndRequest = 3,
    /// The request's parameters (web server → application).
    Params = 4,
    /// The request body (web server → application).
    Stdin = 5,
    /// The response (application → web server).
    Stdout = 6,
    /// Messages for the error log (application → web server).
    Stderr = 7,
    /// FILTER role data (never used by nginx).
    Data = 8,
}

/// Why a request could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EncodeError {
    /// The parameters do not fit one record, which nginx refuses
    /// (`[alert]`), carrying their encoded length.
    RecordTooBig(usize),
    /// A name or value longer than the 4-byte length encoding holds.
    ParamTooLong(usize),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::RecordTooBig(n) => write!(f, "fastcgi request record is too big: {n}"),
            EncodeError::ParamTooLong(n) => write!(f, "fastcgi param is too long: {n}"),
        }
    }
}

impl std::error::Error for EncodeError {}

/// The padding nginx adds after `len` bytes of content: up to the next
/// multiple of 8.
pub fn padding_for(len: usize) -> usize {
    (ALIGN - len % ALIGN) % ALIGN
}

/// A record header for `len` bytes of content followed by `padding`
/// bytes; `len` must be at most [`MAX_CONTENT`] (the encoders ensure it).
pub fn record_header(kind: RecordType, len: u16, padding: u8) -> [u8; HEADER_LEN] {
    let [id_hi, id_lo] = REQUEST_ID.to_be_bytes();
    let [len_hi, len_lo] = len.to_be_bytes();
    [
        VERSION, kind as u8, id_hi, id_lo, len_hi, len_lo, padding, 0,
    ]
}

/// Appends BEGIN_REQUEST with role RESPONDER, and KEEP_CONN when
/// `keep_conn` (`fastcgi_keep_conn on`).
pub fn begin_request(out: &mut Vec<u8>, keep_conn: bool) {
    out.extend_from_slice(&record_header(RecordType::BeginRequest, 8, 0));
    let [role_hi, role_lo] = ROLE_RESPONDER.to_be_bytes();
    let flags = if keep_conn { FLAG_KEEP_CONN } else { 0 };
    out.extend_from_slice(&[role_hi, role_lo, flags, 0, 0, 0, 0, 0]);
}

/// The encoded length of a name or value length: 1 byte up to 127, else 4.
fn len_size(len: usize) -> usize {
    if len > SHORT_LEN_MAX { 4 } else { 1 }
}

/// Appends a name or value length as FastCGI encodes it: one byte up to
/// 127, else four bytes big-endian with the top bit set.
fn put_len(out: &mut Vec<u8>, len: usize) -> Result<(), EncodeError> {
    if len <= SHORT_LEN_MAX {
        out.push(len as u8);
        return Ok(());
    }
    let n = u32::try_from(len)
        .ok()
        .filter(|n| n >> 31 == 0)
        .ok_or(EncodeError::ParamTooLong(len))?;
    out.extend_from_slice(&(n | 0x8000_0000).to_be_bytes());
    Ok(())
}

/// Appends the PARAMS record holding `params` (names and values as the
/// caller evaluated them, `fastcgi_param` and the request's headers as
/// `HTTP_*`) and the empty PARAMS that ends them. As nginx, all of them go
/// into one record; more than [`MAX_CONTENT`] bytes is an error.
pub fn params(out: &mut Vec<u8>, params: &[(&[u8], &[u8])]) -> Result<(), EncodeError> {
    let len: usize = params
        .iter()
        .map(|(k, v)| len_size(k.len()) + len_size(v.len()) + k.len() + v.len())
        .sum();
    let content = u16::try_from(len).map_err(|_| EncodeError::RecordTooBig(len))?;
    let padding = padding_for(len);
    out.reserve(2 * HEADER_LEN + len + padding);
    out.extend_from_slice(&record_header(RecordType::Params, content, padding as u8));
    for (k, v) in params {
        put_len(out, k.len())?;
        put_len(out, v.len())?;
        out.extend_from_slice(k);
        out.extend_from_slice(v);
    }
    out.resize(out.len() + padding, 0);
    out.extend_from_slice(&record_header(RecordType::Params, 0, 0));
    Ok(())
}

/// The header and padding that frame one piece of request body of `len`
/// bytes (at most [`BODY_CHUNK`]), for a caller that sends the body bytes
/// from its own buffer between them: header, body, `padding` zero bytes.
pub fn stdin_frame(len: usize) -> ([u8; HEADER_LEN], usize) {
    let len = len.min(BODY_CHUNK);
    let padding = padding_for(len);
    // BODY_CHUNK fits 16 bits, so the cast keeps every bit.
    (
        record_header(RecordType::Stdin, len as u16, padding as u8),
        padding,
    )
}

/// Appends `body` as STDIN records of at most [`BODY_CHUNK`] bytes, each
/// padded to 8 as nginx pads; an empty `body` appends nothing. Call it as
/// body arrives, then [`stdin_end`].
pub fn stdin(out: &mut Vec<u8>, body: &[u8]) {
    for piece in body.chunks(BODY_CHUNK) {
        let (header, padding) = stdin_frame(piece.len());
        out.extend_from_slice(&header);
        out.extend_from_slice(piece);
        out.resize(out.len() + padding, 0);
    }
}

/// Appends the empty STDIN record that ends the request body.
pub fn stdin_end(out: &mut Vec<u8>) {
    out.extend_from_slice(&record_header(RecordType::Stdin, 0, 0));
}

/// Why the application's records cannot be read, in nginx's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// A version other than 1.
    Version(u8),
    /// A type other than STDOUT, STDERR and END_REQUEST.
    Type(u8),
    /// A request id whose high byte is not 0.
    RequestIdHigh(u8),
    /// A request id whose low byte is not 1.
    RequestIdLow(u8),
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::Version(v) => {
                write!(f, "upstream sent unsupported FastCGI protocol version: {v}")
            }
            RecordError::Type(t) => write!(f, "upstream sent invalid FastCGI record type: {t}"),
            RecordError::RequestIdHigh(b) => {
                write!(
                    f,
                    "upstream sent unexpected FastCGI request id high byte: {b}"
                )
            }
            RecordError::RequestIdLow(b) => {
                write!(
                    f,
                    "upstream sent unexpected FastCGI request id low byte: {b}"
                )
            }
        }
    }
}

impl std::error::Error for RecordError {}

/// The bytes nginx trims from the end of a STDERR piece before logging it.
const STDERR_TRIM: &[u8] = b"\r\n. ";

/// A STDERR piece as nginx logs it (`[error] FastCGI sent in stderr:
/// "..."`): trailing CR, LF, dots and spaces trimmed, the first byte kept
/// whatever it is. `fastcgi_catch_stderr` looks in the trimmed text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StderrMessage<'a>(pub &'a [u8]);

impl<'a> StderrMessage<'a> {
    /// The message of one STDERR piece.
    pub fn new(piece: &'a [u8]) -> Self {
        let keep = piece
            .iter()
            .rposition(|b| !STDERR_TRIM.contains(b))
            .map_or(piece.len().min(1), |i| i + 1);
        StderrMessage(&piece[..keep])
    }
}

impl fmt::Display for StderrMessage<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "FastCGI sent in stderr: \"{}\"",
            String::from_utf8_lossy(self.0)
        )
    }
}

/// What a piece of input held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Response bytes: this range of the slice given to [`RecordParser::feed`].
    Stdout(Range<usize>),
    /// An empty STDOUT record: the application closed its stdout.
    StdoutClosed,
    /// Bytes for the error log (nginx's "FastCGI sent in stderr"): this
    /// range of the slice given; a long message may come in several.
    Stderr(Range<usize>),
    /// END_REQUEST, once its content is read. A short content (nginx does
    /// not read it) leaves the statuses 0.
    EndRequest {
        /// The application's exit status.
        app_status: u32,
        /// The protocol status (0 REQUEST_COMPLETE).
        protocol_status: u8,
    },
}

/// Where the parser is in the record stream.
#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// Reading a header; `got` bytes of it are in `buf`.
    Header { buf: [u8; HEADER_LEN], got: usize },
    /// Inside STDOUT or STDERR content.
    Content {
        kind: RecordType,
        left: usize,
        padding: usize,
    },
    /// Inside END_REQUEST content, keeping its first 8 bytes.
    End {
        buf: [u8; END_REQUEST_LEN],
        got: usize,
        left: usize,
        padding: usize,
    },
    /// Skipping padding.
    Padding { left: usize },
}

/// The incremental parser of records from the application: feed it bytes
/// as they arrive, in pieces of any size.
#[derive(Debug, Clone)]
pub struct RecordParser {
    /// The current state; a new parser expects a header.
    state: State,
}

impl Default for RecordParser {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordParser {
    /// A parser at the start of a record.
    pub fn new() -> Self {
        RecordParser {
            state: State::Header {
                buf: [0; HEADER_LEN],
                got: 0,
            },
        }
    }

    /// Whether the parser stands between two records (nothing pending).
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header { got: 0, .. })
    }

    /// Reads from `input` until an event or its end: returns how many
    /// bytes were used and the event, if any. Ranges in the event index
    /// `input`. Call again with the rest of `input` until it is used up.
    pub fn feed(&mut self, input: &[u8]) -> Result<(usize, Option<Event>), RecordError> {
        let mut pos = 0;
        while pos < input.len() {
            match &mut self.state {
                State::Header { buf, got } => {
                    let take = (HEADER_LEN - *got).min(input.len() - pos);
                    for &b in &input[pos..pos + take] {
                        check_header_byte(*got, b)?;
                        buf[*got] = b;
                        *got += 1;
                    }
                    pos += take;
                    if *got == HEADER_LEN {
                        let buf = *buf;
                        if let Some(ev) = self.start_record(&buf) {
                            return Ok((pos, Some(ev)));
                        }
                    }
                }
                State::Content {
                    kind,
                    left,
                    padding,
                } => {
                    let take = (*left).min(input.len() - pos);
                    let range = pos..pos + take;
                    let kind = *kind;
                    *left -= take;
                    if *left == 0 {
                        self.state = after_content(*padding);
                    }
                    pos += take;
                    let ev = if kind == RecordType::Stderr {
                        Event::Stderr(range)
                    } else {
                        Event::Stdout(range)
                    };
                    return Ok((pos, Some(ev)));
                }
                State::End {
                    buf,
                    got,
                    left,
                    padding,
                } => {
                    let take = (*left).min(input.len() - pos);
                    for &b in &input[pos..pos + take] {
                        if *got < END_REQUEST_LEN {
                            buf[*got] = b;
                            *got += 1;
                        }
                    }
                    *left -= take;
                    pos += take;
                    if *left == 0 {
                        let ev = end_event(buf, *got);
                        self.state = after_content(*padding);
                        return Ok((pos, Some(ev)));
                    }
                }
                State::Padding { left } => {
                    let take = (*left).min(input.len() - pos);
                    *left -= take;
                    pos += take;
                    if *left == 0 {
                        self.state = after_content(0);
                    }
                }
            }
        }
        Ok((pos, None))
    }

    /// Moves past a complete header; an empty record yields its event at
    /// once.
    fn start_record(&mut self, h: &[u8; HEADER_LEN]) -> Option<Event> {
        let len = usize::from(u16::from_be_bytes([h[4], h[5]]));
        let padding = usize::from(h[6]);
        let kind = if h[1] == RecordType::Stdout as u8 {
            RecordType::Stdout
        } else if h[1] == RecordType::Stderr as u8 {
            RecordType::Stderr
        } else {
            RecordType::EndRequest
        };
        if len == 0 {
            self.state = after_content(padding);
            return match kind {
                RecordType::Stdout => Some(Event::StdoutClosed),
                RecordType::EndRequest => Some(end_event(&[0; END_REQUEST_LEN], 0)),
                _ => None,
            };
        }
        self.state = if kind == RecordType::EndRequest {
            State::End {
                buf: [0; END_REQUEST_LEN],
                got: 0,
                left: len,
                padding,
            }
        } else {
            State::Content {
                kind,
                left: len,
                padding,
            }
        };
        None
    }
}

/// Checks header byte `at` as nginx checks it, byte by byte.
fn check_header_byte(at: usize, b: u8) -> Result<(), RecordError> {
    let [id_hi, id_lo] = REQUEST_ID.to_be_bytes();
    match at {
        0 if b != VERSION => Err(RecordError::Version(b)),
        1 if b != RecordType::Stdout as u8
            && b != RecordType::Stderr as u8
            && b != RecordType::EndRequest as u8 =>
        {
            Err(RecordError::Type(b))
        }
        2 if b != id_hi => Err(RecordError::RequestIdHigh(b)),
        3 if b != id_lo => Err(RecordError::RequestIdLow(b)),
        _ => Ok(()),
    }
}

/// The state after a record's content: its padding, or the next header.
fn after_content(padding: usize) -> State {
    if padding > 0 {
        State::Padding { left: padding }
    } else {
        State::Header {
            buf: [0; HEADER_LEN],
            got: 0,
        }
    }
}

/// END_REQUEST's statuses from the `got` bytes of its content kept.
fn end_event(buf: &[u8; END_REQUEST_LEN], got: usize) -> Event {
    if got < 5 {
        return Event::EndRequest {
            app_status: 0,
            protocol_status: 0,
        };
    }
    Event::EndRequest {
        app_status: u32::from_be_bytes([buf[0], buf[1], buf[2], buf[3]]),
        protocol_status: buf[4],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What nginx sent for the request in tests/fixtures/wire/README.md.
    const NGINX_POST: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wire/fastcgi_post.bin"
    ));
    const NGINX_KEEP_CONN: &[u8] = include_bytes!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/wire/fastcgi_keep_conn.bin"
    ));

    #[test]
    fn request_matches_nginx_byte_for_byte() {
        let long = vec![b'z'; 200];
        let ps: Vec<(&[u8], &[u8])> = vec![
            (b"SCRIPT_NAME", b"/f.php"),
            (b"LONG", &long),
            (b"REQUEST_METHOD", b"POST"),
            (b"CONTENT_LENGTH", b"11"),
            (b"HTTP_HOST", b"h"),
            (b"HTTP_USER_AGENT", b"t"),
            (b"HTTP_CONTENT_LENGTH", b"11"),
            (b"HTTP_CONTENT_TYPE", b"application/x-www-form-urlencoded"),
        ];
        let mut out = Vec::new();
        begin_request(&mut out, false);
        params(&mut out, &ps).unwrap();
        stdin(&mut out, b"hello=world");
        stdin_end(&mut out);
        assert_eq!(out, NGINX_POST);
    }

    #[test]
    fn keep_conn_request_matches_nginx() {
        let mut out = Vec::new();
        begin_request(&mut out, true);
        params(&mut out, &[(b"A", b"b")]).unwrap();
        stdin_end(&mut out);
        assert_eq!(out, NGINX_KEEP_CONN);
    }

    #[test]
    fn long_lengths_take_four_bytes_with_the_top_bit() {
        let mut out = Vec::new();
        put_len(&mut out, 127).unwrap();
        put_len(&mut out, 128).unwrap();
        put_len(&mut out, 0x0123_4567).unwrap();
        assert_eq!(out, [127, 0x80, 0, 0, 128, 0x81, 0x23, 0x45, 0x67]);
        assert_eq!(
            put_len(&mut out, 0x8000_0000),
            Err(EncodeError::ParamTooLong(0x8000_0000))
        );
    }

    #[test]
    fn params_beyond_one_record_are_refused_as_nginx() {
        let v = vec![b'v'; MAX_CONTENT];
        let mut out = Vec::new();
        let e = params(&mut out, &[(b"K", &v)]).unwrap_err();
        assert_eq!(e.to_string(), "fastcgi request record is too big: 65541");
        // Exactly 65535 bytes of content still fit.
        let v = vec![b'v'; MAX_CONTENT - 6];
        params(&mut out, &[(b"K", &v)]).unwrap();
        assert_eq!(&out[4..7], &[0xff, 0xff, 1]);
    }

    #[test]
    fn body_is_cut_into_32k_records_padded_to_8() {
        let body = vec![7u8; BODY_CHUNK + 3];
        let mut out = Vec::new();
        stdin(&mut out, &body);
        assert_eq!(&out[..8], &[1, 5, 0, 1, 0x80, 0, 0, 0]);
        let second = HEADER_LEN + BODY_CHUNK;
        assert_eq!(&out[second..second + 8], &[1, 5, 0, 1, 0, 3, 5, 0]);
        assert_eq!(out.len(), second + 8 + 3 + 5);
        assert!(out[out.len() - 5..].iter().all(|&b| b == 0));
        let mut empty = Vec::new();
        stdin(&mut empty, b"");
        assert!(empty.is_empty());
    }

    /// A response of records: STDERR "oops", STDOUT "Status: 200\r\n\r\nhi"
    /// padded, the empty STDOUT, END_REQUEST with app status 3.
    fn response() -> Vec<u8> {
        let mut r = Vec::new();
        r.extend_from_slice(&record_header(RecordType::Stderr, 4, 4));
        r.extend_from_slice(b"oops\0\0\0\0");
        let body = b"Status: 200\r\n\r\nhi";
        r.extend_from_slice(&record_header(RecordType::Stdout, body.len() as u16, 7));
        r.extend_from_slice(body);
        r.extend_from_slice(&[0; 7]);
        r.extend_from_slice(&record_header(RecordType::Stdout, 0, 0));
        r.extend_from_slice(&record_header(RecordType::EndRequest, 8, 0));
        r.extend_from_slice(&[0, 0, 0, 3, 0, 0, 0, 0]);
        r
    }

    /// Feeds `input` in pieces of `step` bytes, returning the STDOUT and
    /// STDERR bytes and the other events.
    fn run(input: &[u8], step: usize) -> (Vec<u8>, Vec<u8>, Vec<Event>) {
        let mut p = RecordParser::new();
        let (mut out, mut err, mut evs) = (Vec::new(), Vec::new(), Vec::new());
        for piece in input.chunks(step) {
            let mut at = 0;
            while at < piece.len() {
                let (n, ev) = p.feed(&piece[at..]).unwrap();
                match ev {
                    Some(Event::Stdout(r)) => out.extend_from_slice(&piece[at..][r]),
                    Some(Event::Stderr(r)) => err.extend_from_slice(&piece[at..][r]),
                    Some(e) => evs.push(e),
                    None => {}
                }
                at += n;
            }
        }
        assert!(p.at_boundary());
        (out, err, evs)
    }

    #[test]
    fn records_parse_the_same_in_any_pieces() {
        let input = response();
        for step in [1, 2, 3, 7, 8, 9, 64, input.len()] {
            let (out, err, evs) = run(&input, step);
            assert_eq!(out, b"Status: 200\r\n\r\nhi", "step {step}");
            assert_eq!(err, b"oops");
            assert_eq!(
                evs,
                [
                    Event::StdoutClosed,
                    Event::EndRequest {
                        app_status: 3,
                        protocol_status: 0
                    }
                ]
            );
        }
    }

    #[test]
    fn stdout_ranges_index_the_input_without_copying() {
        let input = response();
        let mut p = RecordParser::new();
        let (n1, ev1) = p.feed(&input).unwrap();
        assert_eq!(ev1, Some(Event::Stderr(8..12)));
        assert_eq!(n1, 12);
        // The padding and the next header are skipped in the same call.
        let (_, ev2) = p.feed(&input[n1..]).unwrap();
        assert_eq!(ev2, Some(Event::Stdout(4 + 8..4 + 8 + 17)));
    }

    #[test]
    fn bad_headers_are_reported_in_nginx_words() {
        let cases: [(&[u8], &str); 4] = [
            (
                &[2],
                "upstream sent unsupported FastCGI protocol version: 2",
            ),
            (&[1, 5], "upstream sent invalid FastCGI record type: 5"),
            (
                &[1, 6, 1],
                "upstream sent unexpected FastCGI request id high byte: 1",
            ),
            (
                &[1, 6, 0, 2],
                "upstream sent unexpected FastCGI request id low byte: 2",
            ),
        ];
        for (input, text) in cases {
            let e = RecordParser::new().feed(input).unwrap_err();
            assert_eq!(e.to_string(), text);
        }
    }

    #[test]
    fn any_corrupted_byte_gives_events_inside_the_input_or_an_error() {
        let good = response();
        for at in 0..good.len() {
            for b in [0u8, 1, 3, 6, 7, 0x7f, 0xff] {
                let mut input = good.clone();
                input[at] = b;
                let mut p = RecordParser::new();
                let mut pos = 0;
                while pos < input.len() {
                    match p.feed(&input[pos..]) {
                        Ok((n, ev)) => {
                            assert!(n > 0 || ev.is_some(), "no progress at {at}");
                            if let Some(Event::Stdout(r) | Event::Stderr(r)) = ev {
                                assert!(r.start <= r.end && r.end <= n);
                            }
                            pos += n;
                        }
                        Err(_) => break,
                    }
                }
            }
        }
    }

    #[test]
    fn stderr_is_trimmed_as_nginx_logs_it() {
        let m = StderrMessage::new(b"PHP Warning: x. \r\n");
        assert_eq!(m.to_string(), "FastCGI sent in stderr: \"PHP Warning: x\"");
        // The first byte stays, as nginx's loop stops short of it.
        assert_eq!(StderrMessage::new(b"\n\n").0, b"\n");
        assert_eq!(StderrMessage::new(b"").0, b"");
    }

    #[test]
    fn a_short_end_request_still_ends() {
        let mut input = record_header(RecordType::EndRequest, 2, 6).to_vec();
        input.extend_from_slice(&[9, 9, 0, 0, 0, 0, 0, 0]);
        let (_, _, evs) = run(&input, 1);
        assert_eq!(
            evs,
            [Event::EndRequest {
                app_status: 0,
                protocol_status: 0
            }]
        );
    }
}
