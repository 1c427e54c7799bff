//! Errors found while reading a request head, each with the status nginx
//! answers and the words nginx writes in its error log.
//!
//! Owns: the mapping from a refusal to its status and log message.
//! Must not: parse anything; `request` decides which error applies.

use std::fmt;

use crate::http::request::Method;
use crate::http::status::Status;
use crate::http::uri::UriError;

/// Why a request head was refused. Each variant knows its status
/// ([`HeadError::status`]) and prints nginx's error-log words. Every one of
/// them ends the connection after the answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HeadError {
    /// A method with bytes other than `A-Z`, `_`, `-` (400).
    InvalidMethod,
    /// A malformed request line (400).
    InvalidRequest,
    /// A request line without a version whose method is not GET (400,
    /// answered the HTTP/0.9 way: no status line).
    Invalid09Method,
    /// An unusable request target (400).
    InvalidUri(UriError),
    /// `HTTP/2.0` or above in the request line (505).
    UnsupportedVersion,
    /// The request line did not fit in the header buffers (414).
    UriTooLarge,
    /// A header line did not fit in the header buffers (494, sent as 400).
    HeaderTooLarge,
    /// A header line `httparse` refused: bad bytes, obsolete folding (400).
    InvalidHeaderLine,
    /// More header lines than the server's `max_headers` (494, sent as
    /// 400; nginx 1.29.8, backported by Debian to its 1.22.1).
    TooManyHeaders,
    /// A header nginx allows once, sent twice (400).
    DuplicateHeader {
        /// The field name as sent the second time.
        name: String,
        /// The first value.
        previous: String,
        /// The second value.
        value: String,
    },
    /// `Host` sent twice (400).
    DuplicateHost,
    /// An invalid `Host` value (400).
    InvalidHost,
    /// An HTTP/1.1 request without `Host` (400).
    MissingHost,
    /// A non-numeric or overflowing `Content-Length` (400).
    InvalidContentLength,
    /// Both `Content-Length` and `Transfer-Encoding` (400).
    ContentLengthAndTransferEncoding,
    /// `Transfer-Encoding` on an HTTP/1.0 request (400).
    TransferEncodingInHttp10,
    /// A `Transfer-Encoding` other than `chunked` (501).
    UnknownTransferEncoding(String),
    /// TRACE or CONNECT, refused by nginx before any handler runs (405).
    MethodNotAllowed(Method),
}

impl HeadError {
    /// The status to answer with (494 is written as 400 with its own page).
    pub fn status(&self) -> Status {
        match self {
            HeadError::UnsupportedVersion => Status::HTTP_VERSION_NOT_SUPPORTED,
            HeadError::UriTooLarge => Status::REQUEST_URI_TOO_LARGE,
            HeadError::HeaderTooLarge | HeadError::TooManyHeaders => {
                Status::REQUEST_HEADER_TOO_LARGE
            }
            HeadError::UnknownTransferEncoding(_) => Status::NOT_IMPLEMENTED,
            HeadError::MethodNotAllowed(_) => Status::NOT_ALLOWED,
            _ => Status::BAD_REQUEST,
        }
    }

    /// What nginx was doing, for the log's `while ...` suffix.
    pub fn while_reading(&self) -> &'static str {
        match self {
            HeadError::InvalidMethod
            | HeadError::InvalidRequest
            | HeadError::Invalid09Method
            | HeadError::InvalidUri(_)
            | HeadError::UnsupportedVersion
            | HeadError::UriTooLarge => "while reading client request line",
            _ => "while reading client request headers",
        }
    }
}

impl fmt::Display for HeadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeadError::InvalidMethod => f.write_str("client sent invalid method"),
            HeadError::InvalidRequest => f.write_str("client sent invalid request"),
            HeadError::Invalid09Method => {
                f.write_str("client sent invalid method in HTTP/0.9 request")
            }
            HeadError::InvalidUri(e) => write!(f, "{e}"),
            HeadError::UnsupportedVersion => f.write_str("client sent invalid version"),
            HeadError::UriTooLarge => f.write_str("client sent too long URI"),
            HeadError::HeaderTooLarge => f.write_str("client sent too long header line"),
            HeadError::InvalidHeaderLine => f.write_str("client sent invalid header line"),
            HeadError::TooManyHeaders => f.write_str("client sent too many header lines"),
            HeadError::DuplicateHeader {
                name,
                previous,
                value,
            } => write!(
                f,
                "client sent duplicate header line: \"{name}: {value}\", previous value: \"{name}: {previous}\""
            ),
            HeadError::DuplicateHost => f.write_str("client sent duplicate host header"),
            HeadError::InvalidHost => f.write_str("client sent invalid host header"),
            HeadError::MissingHost => {
                f.write_str("client sent HTTP/1.1 request without \"Host\" header")
            }
            HeadError::InvalidContentLength => {
                f.write_str("client sent invalid \"Content-Length\" header")
            }
            HeadError::ContentLengthAndTransferEncoding => f.write_str(
                "client sent \"Content-Length\" and \"Transfer-Encoding\" headers at the same time",
            ),
            HeadError::TransferEncodingInHttp10 => {
                f.write_str("client sent HTTP/1.0 request with \"Transfer-Encoding\" header")
            }
            HeadError::UnknownTransferEncoding(te) => {
                write!(f, "client sent unknown \"Transfer-Encoding\": \"{te}\"")
            }
            HeadError::MethodNotAllowed(m) => write!(f, "client sent {} method", m.as_str()),
        }
    }
}

impl std::error::Error for HeadError {}
