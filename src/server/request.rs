//! What is known about one request while it is served: the parsed head,
//! the connection it came on, the server that answers it, and its timing.
//! Variables (`$uri`, `$remote_addr`, …) are read from here.

use std::borrow::Cow;
use std::net::SocketAddr;
use std::time::{Instant, SystemTime};

use crate::config::model::Server;
use crate::config::template::{Part, Template};
use crate::http::request::RequestHead;

/// One request in flight.
pub struct Req<'a> {
    /// The parsed head.
    pub head: &'a RequestHead,
    /// The decoded, normalized path (`$uri`): the head's own until an
    /// internal redirect replaces it.
    pub uri: Cow<'a, str>,
    /// The client's address.
    pub peer: SocketAddr,
    /// Our address on this connection.
    pub local: SocketAddr,
    /// The virtual server answering.
    pub server: &'a Server,
    /// The connection's serial number (`$connection`, `*N` in the error log).
    pub conn_no: u64,
    /// How many requests this connection has carried, this one included.
    pub conn_requests: u64,
    /// When the first byte of the request arrived (`$request_time`).
    pub start: Instant,
    /// The request head's length in bytes (`$request_length`).
    pub head_len: usize,
}

/// What was sent, for the access log.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sent {
    /// The status code sent.
    pub status: u16,
    /// Bytes of the response body written (`$body_bytes_sent`).
    pub body_bytes: u64,
    /// All bytes written, head included (`$bytes_sent`).
    pub bytes: u64,
}

impl Req<'_> {
    /// The same request with another head (an `error_page` fetch).
    pub fn with_head<'b>(&'b self, head: &'b RequestHead) -> Req<'b> {
        Req {
            head,
            uri: self.uri.clone(),
            peer: self.peer,
            local: self.local,
            server: self.server,
            conn_no: self.conn_no,
            conn_requests: self.conn_requests,
            start: self.start,
            head_len: self.head_len,
        }
    }

    /// The host for redirects and `$host`: the request's host, else the
    /// server's first name, else our address.
    pub fn host(&self) -> Cow<'_, str> {
        if let Some(h) = &self.head.host {
            return Cow::Borrowed(h);
        }
        match self
            .server
            .names
            .first()
            .filter(|n| !n.is_empty() && !n.starts_with(['~', '*', '.']))
        {
            Some(n) => Cow::Borrowed(n),
            None => Cow::Owned(self.local.ip().to_string()),
        }
    }

    /// The request line as sent (`$request`).
    pub fn request_line(&self) -> String {
        let version = match self.head.version {
            crate::http::request::Version::Http09 => "",
            crate::http::request::Version::Http10 => " HTTP/1.0",
            crate::http::request::Version::Http11 => " HTTP/1.1",
        };
        format!(
            "{} {}{}",
            self.head.method.as_str(),
            String::from_utf8_lossy(&self.head.uri.request_uri),
            version
        )
    }

    /// The value of a variable, `None` when it is not set (logged as `-`).
    pub fn var(&self, name: &str, sent: Option<&Sent>) -> Option<Cow<'_, str>> {
        let lossy = |b: &[u8]| Cow::Owned(String::from_utf8_lossy(b).into_owned());
        Some(match name {
            "uri" | "document_uri" => Cow::Borrowed(&*self.uri),
            "request_uri" => lossy(&self.head.uri.request_uri),
            "args" | "query_string" => lossy(self.head.uri.args.as_deref()?),
            "is_args" => Cow::Borrowed(if self.head.uri.args.is_some() {
                "?"
            } else {
                ""
            }),
            "request_method" => Cow::Borrowed(self.head.method.as_str()),
            "request" => Cow::Owned(self.request_line()),
            "host" => self.host(),
            "remote_addr" => Cow::Owned(self.peer.ip().to_string()),
            "remote_port" => Cow::Owned(self.peer.port().to_string()),
            "server_addr" => Cow::Owned(self.local.ip().to_string()),
            "server_port" => Cow::Owned(self.local.port().to_string()),
            "server_name" => Cow::Borrowed(self.server.names.first().map_or("", String::as_str)),
            "server_protocol" => Cow::Borrowed(match self.head.version {
                crate::http::request::Version::Http09 => "HTTP/0.9",
                crate::http::request::Version::Http10 => "HTTP/1.0",
                crate::http::request::Version::Http11 => "HTTP/1.1",
            }),
            "scheme" => Cow::Borrowed("http"),
            "connection" => Cow::Owned(self.conn_no.to_string()),
            "connection_requests" => Cow::Owned(self.conn_requests.to_string()),
            "request_length" => Cow::Owned(self.head_len.to_string()),
            "request_time" => {
                let t = self.start.elapsed();
                Cow::Owned(format!("{}.{:03}", t.as_secs(), t.subsec_millis()))
            }
            "msec" => {
                let t = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
                Cow::Owned(format!("{}.{:03}", t.as_secs(), t.subsec_millis()))
            }
            "time_local" => Cow::Owned(crate::log::clock::with_now(|t| t.time_local.clone())),
            "time_iso8601" => Cow::Owned(crate::log::clock::with_now(|t| t.iso8601.clone())),
            "pid" => Cow::Owned(crate::sys::process::getpid().to_string()),
            "nginx_version" => Cow::Borrowed(crate::VERSION),
            "hostname" => return None,
            "remote_user" => return None,
            "content_length" => Cow::Owned(self.head.content_length?.to_string()),
            "content_type" => lossy(self.head.header("content-type")?),
            "status" => Cow::Owned(format!("{:03}", sent?.status)),
            "body_bytes_sent" => Cow::Owned(sent?.body_bytes.to_string()),
            "bytes_sent" => Cow::Owned(sent?.bytes.to_string()),
            n if n.starts_with("http_") => {
                let want = n["http_".len()..].replace('_', "-");
                lossy(self.head.header(&want)?)
            }
            n if n.starts_with("arg_") => {
                let args = self.head.uri.args.as_deref()?;
                let want = &n.as_bytes()["arg_".len()..];
                let v = args.split(|&b| b == b'&').find_map(|kv| {
                    let (k, v) = match kv.iter().position(|&b| b == b'=') {
                        Some(i) => (&kv[..i], &kv[i + 1..]),
                        None => (kv, &b""[..]),
                    };
                    k.eq_ignore_ascii_case(want).then_some(v)
                })?;
                lossy(v)
            }
            n if n.starts_with("cookie_") => {
                let cookies = self.head.header("cookie")?;
                let want = &n["cookie_".len()..];
                let text = String::from_utf8_lossy(cookies).into_owned();
                let v = text
                    .split(';')
                    .filter_map(|c| c.trim().split_once('='))
                    .find(|(k, _)| *k == want)
                    .map(|(_, v)| v.to_string())?;
                Cow::Owned(v)
            }
            _ => return None,
        })
    }

    /// Expands a template; unset variables expand to nothing.
    pub fn expand(&self, t: &Template) -> String {
        let mut out = String::new();
        for p in &t.parts {
            match p {
                Part::Literal(s) => out.push_str(s),
                Part::Var(v) => {
                    if let Some(val) = self.var(v, None) {
                        out.push_str(&val);
                    }
                }
            }
        }
        out
    }

    /// The error log's context suffix: `, client: …, server: …, request: "…", host: "…"`.
    pub fn log_context(&self) -> String {
        let mut s = format!(
            ", client: {}, server: {}, request: \"{}\"",
            self.peer.ip(),
            self.server.names.first().map_or("", String::as_str),
            self.request_line()
        );
        if let Some(h) = self.head.header("host") {
            s.push_str(&format!(", host: \"{}\"", String::from_utf8_lossy(h)));
        }
        s
    }
}
