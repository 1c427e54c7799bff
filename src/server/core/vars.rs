//! Evaluating variables and templates for a request, as nginx's
//! `ngx_http_variables.c` does. Values are bytes (a header or a decoded
//! path need not be UTF-8); `None` is nginx's "not found", which the access
//! log prints as `-`.
//!
//! Every [`Var`] the configuration layer accepts has a value here: the
//! configuration refuses any other name at load time.

use std::borrow::Cow;
use std::sync::OnceLock;
use std::time::SystemTime;

use crate::config::model::Root;
use crate::config::template::{Part, Template};
use crate::config::vars::{Builtin, Family, Var};
use crate::http::request::Version;

use crate::server::core::reply::Reply;
use crate::server::core::request::{Req, Sent, UpstreamTry};

/// The response as sent, for `$status`, `$sent_http_*` and the byte counts.
#[derive(Clone, Copy)]
pub struct Response<'r> {
    /// What the connection wrote.
    pub sent: &'r Sent,
    /// The reply's head fields.
    pub reply: &'r Reply,
    /// Whether the connection was kept alive after it.
    pub keep_alive: bool,
    /// The `Keep-Alive: timeout=N` sent with it, if any.
    pub keep_alive_header: Option<u64>,
}

/// Whether nginx caches `var` in the variables a request shares with its
/// subrequests while its value is a request's own: the response fields
/// and `$request_completion` (the others that are cached are the same for
/// the whole tree, or are the access log's own, computed per line:
/// `$status`, `$bytes_sent`, `$body_bytes_sent`, `$request_length`,
/// `$request_time`).
fn cached_in_tree(var: &Var) -> bool {
    matches!(
        var,
        Var::Family(Family::SentHttp | Family::SentTrailer, _)
            | Var::Builtin(Builtin::RequestCompletion)
    )
}

fn owned(s: String) -> Option<Cow<'static, [u8]>> {
    Some(Cow::Owned(s.into_bytes()))
}

fn borrowed(s: &str) -> Option<Cow<'_, [u8]>> {
    Some(Cow::Borrowed(s.as_bytes()))
}

/// Seconds with milliseconds, as nginx prints times (`0.003`).
fn secs(d: std::time::Duration) -> String {
    format!("{}.{:03}", d.as_secs(), d.subsec_millis())
}

impl<'a> Req<'a> {
    /// The value of `var` for this request; `resp` once the response is
    /// known (the access log).
    pub fn var<'s>(&'s self, var: &Var, resp: Option<Response<'s>>) -> Option<Cow<'s, [u8]>> {
        if resp.is_some() && self.tree_vars.peek().is_some() && cached_in_tree(var) {
            return self.tree_var(var, resp);
        }
        self.var_now(var, resp)
    }

    /// A response variable of a request with subrequests: the value the
    /// first request of the tree to read it found (with log_subrequest on,
    /// the main request's log line shows the first subrequest's
    /// `$sent_http_content_type`, as nginx's does).
    fn tree_var<'s>(&'s self, var: &Var, resp: Option<Response<'s>>) -> Option<Cow<'s, [u8]>> {
        let name = var.name().to_ascii_lowercase();
        let vars = self.tree_vars.get();
        if let Some((_, v)) = vars.borrow().iter().find(|(n, _)| *n == name) {
            return v.clone().map(Cow::Owned);
        }
        let v = self.var_now(var, resp).map(Cow::into_owned);
        vars.borrow_mut().push((name, v.clone()));
        v.map(Cow::Owned)
    }

    /// The value of `var` computed now.
    fn var_now<'s>(&'s self, var: &Var, resp: Option<Response<'s>>) -> Option<Cow<'s, [u8]>> {
        match var {
            Var::Builtin(b) => self.builtin(*b, resp),
            Var::Family(f, name) => match self.shadowed(|| var.name()) {
                Some(v) => Some(v),
                None => self.family(*f, name, resp),
            },
            Var::Capture(n) => {
                let c = self.captures.borrow();
                Some(Cow::Owned(c.as_ref()?.get(*n as usize).as_bytes().to_vec()))
            }
            Var::Named(name) => self.named(name, resp).map(Cow::Owned),
        }
    }

    /// A value `set` gave a variable that is otherwise built in or part of
    /// a family (nginx lets `set` store into `$http_x`, `$arg_x`,
    /// `$proxy_host` …, and reads the stored value once there is one).
    fn shadowed(&self, name: impl FnOnce() -> String) -> Option<Cow<'static, [u8]>> {
        if !self.site.http().is_some_and(|h| h.sets_builtins)
            || self
                .user_vars
                .peek()
                .is_none_or(|vars| vars.borrow().is_empty())
        {
            return None;
        }
        self.user_var(&name()).map(Cow::Owned)
    }

    fn builtin<'s>(&'s self, b: Builtin, resp: Option<Response<'s>>) -> Option<Cow<'s, [u8]>> {
        let head = self.head;
        match b {
            Builtin::Args | Builtin::QueryString => match self.args()? {
                Cow::Borrowed(s) => borrowed(s),
                Cow::Owned(s) => owned(s),
            },
            Builtin::IsArgs => borrowed(if self.args().is_some_and(|a| !a.is_empty()) {
                "?"
            } else {
                ""
            }),
            Builtin::Uri | Builtin::DocumentUri => borrowed(&self.uri),
            Builtin::RequestUri => Some(Cow::Borrowed(&head.uri.request_uri)),
            Builtin::RequestMethod if self.upstream.accel_get => borrowed("GET"),
            Builtin::RequestMethod => borrowed(head.method.as_str()),
            Builtin::Request => owned(self.request_line()),
            Builtin::Host => match self.host() {
                Cow::Borrowed(s) => borrowed(s),
                Cow::Owned(s) => owned(s),
            },
            Builtin::Hostname => borrowed(hostname()),
            Builtin::RemoteAddr => owned(self.peer.to_string()),
            Builtin::RemotePort => match self.peer.port() {
                // nginx prints nothing for port 0 (a unix-domain client,
                // or an address `realip` took from a header without a
                // port).
                0 => borrowed(""),
                port => owned(port.to_string()),
            },
            Builtin::BinaryRemoteAddr => Some(self.peer.binary()),
            // `unix:/path` on a unix-domain socket, with no port.
            Builtin::ServerAddr => owned(self.local.host_text()),
            Builtin::ServerPort => match self.local.port() {
                0 => borrowed(""),
                port => owned(port.to_string()),
            },
            Builtin::ServerName => borrowed(self.server.name()),
            Builtin::InvalidReferer => {
                let valid = self.conf.valid_referers.as_ref().is_none_or(|v| {
                    v.valid(
                        head.referer.as_deref(),
                        &self.server.names,
                        &self.server.name_regexes,
                    )
                });
                borrowed(if valid { "" } else { "1" })
            }
            Builtin::SecureLink => crate::server::core::hooks::access::secure_link::value(self),
            Builtin::SecureLinkExpires => {
                crate::server::core::hooks::access::secure_link::expires(self)
            }
            Builtin::ServerProtocol => borrowed(match head.version {
                Version::Http09 => "HTTP/0.9",
                Version::Http10 => "HTTP/1.0",
                Version::Http11 => "HTTP/1.1",
            }),
            Builtin::Scheme => borrowed(if self.tls.is_some() { "https" } else { "http" }),
            Builtin::Https => borrowed(if self.tls.is_some() { "on" } else { "" }),
            Builtin::SslProtocol => borrowed(self.tls.as_ref()?.protocol),
            Builtin::SslCipher => borrowed(self.tls.as_ref()?.cipher),
            Builtin::SslCiphers => owned(crate::tls::ciphers::format_offered(
                &self.tls.as_ref()?.offered_suites,
            )),
            Builtin::SslCurves => owned(crate::tls::groups::format_offered(
                &self.tls.as_ref()?.offered_groups,
            )),
            Builtin::SslServerName => borrowed(self.tls.as_ref()?.server_name.as_deref()?),
            Builtin::SslSessionReused => borrowed(match &self.tls {
                Some(t) if t.reused => "r",
                Some(_) => ".",
                None => return None,
            }),
            Builtin::SslSessionId
            | Builtin::SslCurve
            | Builtin::SslAlpnProtocol
            | Builtin::SslEarlyData
            | Builtin::SslClientVerify
            | Builtin::SslClientSDn
            | Builtin::SslClientIDn
            | Builtin::SslClientSDnLegacy
            | Builtin::SslClientIDnLegacy
            | Builtin::SslClientSerial
            | Builtin::SslClientFingerprint
            | Builtin::SslClientCert
            | Builtin::SslClientRawCert
            | Builtin::SslClientEscapedCert
            | Builtin::SslClientVStart
            | Builtin::SslClientVEnd
            | Builtin::SslClientVRemain => {
                crate::server::engine::tls::vars::value(b, self.tls.as_ref()?, self.early_data)
                    .flatten()
            }
            Builtin::AcmeCertificate | Builtin::AcmeCertificateKey => {
                // nginx-acme's `$acme_certificate*`: `data:` and the PEM of
                // the server's order, not found before one is issued.
                let id = self.server.acme.as_ref()?.id();
                let c = self.site.shared.acme.current(&id)?;
                let pem = if b == Builtin::AcmeCertificate {
                    &c.chain
                } else {
                    &c.key
                };
                Some(Cow::Owned([&b"data:"[..], pem].concat()))
            }
            Builtin::Connection => owned(self.conn_no.to_string()),
            Builtin::ConnectionRequests => owned(self.conn_requests.to_string()),
            Builtin::ConnectionTime => owned(secs(self.conn_start.elapsed())),
            // A subrequest read nothing (nginx's `sr->request_length` is 0).
            Builtin::RequestLength if !self.is_main() => borrowed("0"),
            Builtin::RequestLength => {
                owned((self.head_len as u64 + self.body.received).to_string())
            }
            Builtin::RequestTime => owned(secs(self.start.elapsed())),
            Builtin::Msec => {
                let t = SystemTime::now()
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .unwrap_or_default();
                owned(secs(t))
            }
            Builtin::TimeLocal => owned(crate::log::clock::with_now(|t| t.time_local.clone())),
            Builtin::TimeIso8601 => owned(crate::log::clock::with_now(|t| t.iso8601.clone())),
            Builtin::Pid => owned(crate::sys::process::getpid().to_string()),
            Builtin::NginxVersion => borrowed(crate::VERSION),
            Builtin::RemoteUser => remote_user(head.header("authorization")?).map(Cow::Owned),
            Builtin::ContentLength => match head.content_length {
                Some(n) => owned(n.to_string()),
                // nginx gives a chunked body's length once it was read.
                None if head.chunked && self.body.received > 0 => {
                    owned(self.body.received.to_string())
                }
                None => None,
            },
            Builtin::ContentType => head.header("content-type").map(Cow::Borrowed),
            // nginx logs its private 494–497 as the 400 it sent
            // (`r->err_status`, ngx_http_special_response_handler).
            Builtin::Status => owned(format!(
                "{:03}",
                crate::http::status::Status(resp?.sent.status).wire().0
            )),
            Builtin::BodyBytesSent => owned(resp?.sent.body_bytes.to_string()),
            Builtin::BytesSent => owned(resp?.sent.bytes.to_string()),
            Builtin::RequestCompletion => borrowed(if resp?.sent.complete { "OK" } else { "" }),
            Builtin::DocumentRoot => owned(self.document_root()),
            Builtin::RealpathRoot => self.realpath_root.as_deref().map(borrowed)?,
            Builtin::RequestFilename => Some(Cow::Owned(
                crate::server::core::hooks::static_file::map_path(
                    self,
                    self.conf,
                    self.location,
                    &self.uri,
                )
                .into_os_string()
                .into_encoded_bytes(),
            )),
            Builtin::RequestId => borrowed(self.request_id.get().get_or_init(request_id)),
            Builtin::RequestBody => self
                .body
                .in_memory
                .as_deref()
                .map(|b| Cow::Borrowed(b.as_slice())),
            Builtin::RequestBodyFile => Some(Cow::Owned(
                self.body
                    .file
                    .as_deref()?
                    .as_os_str()
                    .as_encoded_bytes()
                    .to_vec(),
            )),
            Builtin::RealipRemoteAddr
            | Builtin::RealipRemotePort
            | Builtin::LimitReqStatus
            | Builtin::LimitConnStatus
            | Builtin::ConnectionsActive
            | Builtin::ConnectionsReading
            | Builtin::ConnectionsWriting
            | Builtin::ConnectionsWaiting => crate::server::core::hooks::access::var(self, b),
            Builtin::LimitRate => owned(self.limit_rate.unwrap_or(0).to_string()),
            Builtin::Pipe => borrowed(if self.pipelined { "p" } else { "." }),
            Builtin::ProxyHost => match self.shadowed(|| b.name().to_string()) {
                Some(v) => Some(v),
                None => borrowed(self.upstream.proxy_host.as_deref()?),
            },
            Builtin::ProxyPort => match self.shadowed(|| b.name().to_string()) {
                Some(v) => Some(v),
                None => borrowed(self.upstream.proxy_port.as_deref()?),
            },
            Builtin::ProxyAddXForwardedFor => {
                let ip = self.peer.to_string();
                match head.header("x-forwarded-for") {
                    Some(v) => {
                        let mut out = v.to_vec();
                        out.extend_from_slice(b", ");
                        out.extend_from_slice(ip.as_bytes());
                        Some(Cow::Owned(out))
                    }
                    None => owned(ip),
                }
            }
            Builtin::UpstreamAddr => self.upstream_list(|t| Some(t.addr.to_string())),
            Builtin::UpstreamStatus => {
                self.upstream_list(|t| Some(t.status.map_or("-".into(), |s| s.to_string())))
            }
            Builtin::UpstreamResponseTime => self.upstream_list(|t| {
                let time = match &t.live {
                    Some(l) => l.response_time.get().or(t.response_time),
                    None => t.response_time,
                };
                Some(time.map_or("-".into(), fmt_secs))
            }),
            Builtin::UpstreamConnectTime => {
                self.upstream_list(|t| Some(t.connect_time.map_or("-".into(), fmt_secs)))
            }
            Builtin::UpstreamHeaderTime => {
                self.upstream_list(|t| Some(t.header_time.map_or("-".into(), fmt_secs)))
            }
            Builtin::UpstreamResponseLength => self.upstream_list(|t| {
                let n = match &t.live {
                    Some(l) => Some(l.response_length.get()),
                    None => t.response_length,
                };
                Some(n.unwrap_or(0).to_string())
            }),
            Builtin::UpstreamBytesReceived => self.upstream_list(|t| {
                let n = t
                    .live
                    .as_ref()
                    .map_or(t.bytes_received, |l| l.bytes_received.get());
                Some(n.to_string())
            }),
            Builtin::UpstreamBytesSent => self.upstream_list(|t| Some(t.bytes_sent.to_string())),
            Builtin::UpstreamCacheStatus => borrowed(self.upstream.cache_status?),
            Builtin::ProxyInternalBodyLength => owned(self.upstream.body_length?.to_string()),
            Builtin::DateLocal => crate::server::core::hooks::ssi::date_variable(
                crate::server::core::hooks::ssi::DEFAULT_TIMEFMT,
                false,
            )
            .map(Cow::Owned),
            Builtin::DateGmt => crate::server::core::hooks::ssi::date_variable(
                crate::server::core::hooks::ssi::DEFAULT_TIMEFMT,
                true,
            )
            .map(Cow::Owned),
            Builtin::ProxyInternalChunked => borrowed(if self.upstream.body_chunked {
                "chunked"
            } else {
                return None;
            }),
        }
    }

    /// nginx's upstream variables: one value per try, `, ` between tries
    /// and ` : ` between groups (after an internal redirect).
    fn upstream_list(
        &self,
        each: impl Fn(&UpstreamTry) -> Option<String>,
    ) -> Option<Cow<'_, [u8]>> {
        let u = &self.upstream;
        if u.tries.is_empty() {
            return None;
        }
        let mut out = String::new();
        for (i, t) in u.tries.iter().enumerate() {
            if i > 0 {
                out.push_str(if u.group_starts.contains(&i) {
                    " : "
                } else {
                    ", "
                });
            }
            out.push_str(&each(t)?);
        }
        owned(out)
    }

    fn family<'s>(
        &'s self,
        f: Family,
        name: &str,
        resp: Option<Response<'s>>,
    ) -> Option<Cow<'s, [u8]>> {
        if name.is_empty() && f == Family::Arg {
            // `$arg_`: nginx's ngx_http_arg() never finds an empty name
            // (an empty cookie name, though, is found).
            return None;
        }
        match f {
            Family::Http => {
                let want = name.replace('_', "-");
                header_joined(
                    self.head
                        .headers
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(&want))
                        .map(|(_, v)| v),
                    if want.eq_ignore_ascii_case("cookie") {
                        "; "
                    } else {
                        ", "
                    },
                )
            }
            Family::Arg => arg(self.args()?.as_bytes(), name.as_bytes()).map(|v| {
                // The value borrows `self.args()`, which may be owned: copy.
                Cow::Owned(v.to_vec())
            }),
            Family::Cookie => {
                let cookies = self.head.header("cookie")?;
                cookie(cookies, name.as_bytes()).map(Cow::Borrowed)
            }
            Family::SentHttp => sent_header(resp?, name),
            Family::SentTrailer => {
                let trailers = self.trailers.borrow();
                trailers
                    .iter()
                    .find(|(n, _)| header_name_matches(n, name))
                    .map(|(_, v)| Cow::Owned(v.clone().into_bytes()))
            }
            Family::UpstreamHttp => {
                let want = name.replace('_', "-");
                header_joined(
                    self.upstream
                        .headers
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(want.as_bytes()))
                        .map(|(_, v)| v),
                    ", ",
                )
            }
            Family::UpstreamTrailer => {
                let want = name.replace('_', "-");
                header_joined(
                    self.upstream
                        .trailers
                        .iter()
                        .filter(|(n, _)| n.eq_ignore_ascii_case(&want))
                        .map(|(_, v)| v.as_slice()),
                    ", ",
                )
            }
            Family::UpstreamCookie => {
                // `Set-Cookie: name=value; …` of the upstream's response.
                self.upstream
                    .headers
                    .iter()
                    .filter(|(n, _)| n.eq_ignore_ascii_case(b"set-cookie"))
                    .find_map(|(_, v)| set_cookie(v, name.as_bytes()))
                    .map(Cow::Borrowed)
            }
        }
    }

    /// `$document_root`: the `root` (or `alias`) value of the current
    /// location, expanded.
    pub fn document_root(&self) -> String {
        match &self.conf.root {
            Root::Root(t) | Root::Alias(t) => self.expand_lossy(t),
        }
    }

    /// Expands a template into bytes; variables that are not found expand
    /// to nothing, as in nginx's scripts.
    pub fn expand(&self, t: &Template) -> Vec<u8> {
        self.expand_with(t, None)
    }

    /// [`Req::expand`] once the response is known (`$sent_http_*`,
    /// `$status`): trailers and log lines.
    pub fn expand_with(&self, t: &Template, resp: Option<Response<'_>>) -> Vec<u8> {
        if let [Part::Literal(s)] = t.parts.as_slice() {
            // A text without variables (`return 200 "OK"`): one copy of
            // the right size, not a buffer grown from empty.
            return s.as_bytes().to_vec();
        }
        let mut out = Vec::new();
        for p in &t.parts {
            match p {
                Part::Literal(s) => out.extend_from_slice(s.as_bytes()),
                Part::Var(v) => {
                    if let Some(val) = self.var(v, resp) {
                        out.extend_from_slice(&val);
                    }
                }
            }
        }
        out
    }

    /// [`Req::expand`] as text, invalid UTF-8 replaced: for values that are
    /// names (pools, hosts) or go into messages.
    pub fn expand_lossy(&self, t: &Template) -> String {
        if let [Part::Literal(s)] = t.parts.as_slice() {
            return s.clone();
        }
        match String::from_utf8(self.expand(t)) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        }
    }
}

fn fmt_secs(s: f64) -> String {
    format!("{s:.3}")
}

/// Header values joined as nginx joins repeated fields for a variable.
fn header_joined<'v>(
    mut values: impl Iterator<Item = &'v [u8]>,
    sep: &str,
) -> Option<Cow<'v, [u8]>> {
    let first = values.next()?;
    let Some(second) = values.next() else {
        return Some(Cow::Borrowed(first));
    };
    let mut out = first.to_vec();
    for v in std::iter::once(second).chain(values) {
        out.extend_from_slice(sep.as_bytes());
        out.extend_from_slice(v);
    }
    Some(Cow::Owned(out))
}

/// `$arg_NAME`: the first argument whose name matches case-insensitively
/// (`ngx_http_arg`).
fn arg<'s>(args: &'s [u8], want: &[u8]) -> Option<&'s [u8]> {
    args.split(|&b| b == b'&').find_map(|kv| {
        let (k, v) = match kv.iter().position(|&b| b == b'=') {
            Some(i) => (&kv[..i], &kv[i + 1..]),
            None => (kv, &b""[..]),
        };
        k.eq_ignore_ascii_case(want).then_some(v)
    })
}

/// `$cookie_NAME` from a `Cookie` value (`ngx_http_parse_multi_header_lines`:
/// names compared case-insensitively, separated by `;` or `,`).
fn cookie<'s>(header: &'s [u8], want: &[u8]) -> Option<&'s [u8]> {
    header
        .split(|&b| b == b';' || b == b',')
        .filter_map(|c| {
            let c = c.trim_ascii();
            let i = c.iter().position(|&b| b == b'=')?;
            Some((&c[..i], &c[i + 1..]))
        })
        .find(|(k, _)| k.eq_ignore_ascii_case(want))
        .map(|(_, v)| v)
}

/// The value of cookie `want` if `Set-Cookie` value `header` sets it, as
/// nginx 1.22's `ngx_http_parse_set_cookie_lines` reads it: the name
/// (ASCII case-insensitive) at the very start, spaces, `=`, spaces, then
/// the value up to the first `;` (a comma is part of the value: an
/// `Expires` date has one).
fn set_cookie<'s>(header: &'s [u8], want: &[u8]) -> Option<&'s [u8]> {
    if header.len() <= want.len() || !header[..want.len()].eq_ignore_ascii_case(want) {
        return None;
    }
    let rest = &header[want.len()..];
    let rest = &rest[rest.iter().take_while(|&&b| b == b' ').count()..];
    let rest = rest.strip_prefix(b"=")?;
    let rest = &rest[rest.iter().take_while(|&&b| b == b' ').count()..];
    let end = rest.iter().position(|&b| b == b';').unwrap_or(rest.len());
    Some(&rest[..end])
}

/// `$remote_user`: the user of a `Basic` `Authorization` header.
/// `$remote_user`: the user of `Authorization: Basic`, decoded as the
/// basic-authentication module decodes it (`ngx_http_auth_basic_user`).
fn remote_user(auth: &[u8]) -> Option<Vec<u8>> {
    crate::server::core::hooks::access::credentials_of(auth).map(|c| c.user)
}

/// Whether a field `name` is what a variable's suffix `var` names: nginx
/// compares the field's name lowercased, `-` read as `_`.
fn header_name_matches(name: &str, var: &str) -> bool {
    name.len() == var.len()
        && name.bytes().zip(var.bytes()).all(|(n, v)| {
            let n = if n == b'-' {
                b'_'
            } else {
                n.to_ascii_lowercase()
            };
            n == v.to_ascii_lowercase()
        })
}

/// `$sent_http_NAME` from the reply as sent (nginx 1.22's table: the
/// fields the header filter writes itself, `Cache-Control` and `Link`
/// joined with `, `, any other the first of its name).
fn sent_header<'r>(resp: Response<'r>, name: &str) -> Option<Cow<'r, [u8]>> {
    let want = name.to_ascii_lowercase();
    let reply = resp.reply;
    let text = |s: &'r str| Some(Cow::Borrowed(s.as_bytes()));
    match want.as_str() {
        "content_type" => return reply.content_type.as_deref().and_then(text),
        "content_length" => {
            if reply.chunked_to_client() {
                return None;
            }
            return reply
                .announced_length()
                .map(|n| Cow::Owned(n.to_string().into_bytes()));
        }
        "last_modified" => {
            if let Some((_, v)) = reply
                .extra
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("Last-Modified"))
            {
                return text(v);
            }
            return reply
                .last_modified
                .filter(|&t| t >= 0)
                .map(|t| Cow::Owned(crate::http::date::format_unix(t).into_bytes()));
        }
        "location" => return reply.location.as_deref().and_then(text),
        "etag" => return crate::server::core::hooks::headers_filter::etag(reply).and_then(text),
        "content_range" => return reply.content_range.as_deref().and_then(text),
        "accept_ranges" if reply.accept_ranges => return text("bytes"),
        "connection" => {
            return text(if reply.status.0 == 101 {
                "upgrade"
            } else if resp.keep_alive {
                "keep-alive"
            } else {
                "close"
            });
        }
        "keep_alive" => {
            return match resp.keep_alive_header {
                Some(t) if resp.keep_alive => Some(Cow::Owned(format!("timeout={t}").into_bytes())),
                _ => None,
            };
        }
        "transfer_encoding" if reply.chunked_to_client() => return text("chunked"),
        "cache_control" | "link" => {
            return header_joined(
                reply
                    .extra
                    .iter()
                    .filter(|(n, _)| header_name_matches(n, &want))
                    .map(|(_, v)| v.as_bytes()),
                ", ",
            );
        }
        _ => {}
    }
    reply
        .extra
        .iter()
        .find(|(n, _)| header_name_matches(n, &want))
        .map(|(_, v)| Cow::Borrowed(v.as_bytes()))
}

/// `$hostname`, read once per process.
fn hostname() -> &'static str {
    static NAME: OnceLock<String> = OnceLock::new();
    NAME.get_or_init(|| crate::sys::random::hostname().unwrap_or_else(|_| "localhost".into()))
}

/// `$request_id`: 16 random bytes as 32 lowercase hex digits, as nginx.
fn request_id() -> String {
    let mut bytes = [0u8; 16];
    if crate::sys::random::getrandom(&mut bytes).is_err() {
        // Never at run time (the kernel's pool is seeded after boot); a
        // clock-based id still differs between requests.
        let t = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes = t.to_le_bytes();
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_and_cookies_as_nginx() {
        assert_eq!(arg(b"a=1&B=2&c", b"b"), Some(&b"2"[..]));
        assert_eq!(arg(b"a=1&c", b"c"), Some(&b""[..]));
        assert_eq!(arg(b"a=1", b"x"), None);
        assert_eq!(cookie(b"a=1; SID=xyz, c=3", b"sid"), Some(&b"xyz"[..]));
        assert_eq!(cookie(b"a=1", b"b"), None);
    }

    /// The cases of nginx-tests' proxy_upstream_cookie.t.
    #[test]
    fn set_cookie_values_as_nginx() {
        let v = |h: &str| {
            set_cookie(h.as_bytes(), b"tc").map(|v| String::from_utf8_lossy(v).into_owned())
        };
        assert_eq!(v("tc="), Some(String::new()));
        assert_eq!(v("tc= ;"), Some(String::new()));
        assert_eq!(v("tc =   ; Domain=example.com;"), Some(String::new()));
        assert_eq!(v("tc=,").as_deref(), Some(","));
        assert_eq!(v("tc\t=\tcontent     ;"), None);
        assert_eq!(
            v("tc=con  tent; Domain=example.com").as_deref(),
            Some("con  tent")
        );
        assert_eq!(v("tc = content").as_deref(), Some("content"));
        assert_eq!(v("TC==;abc").as_deref(), Some("="));
        assert_eq!(v("=tc=content"), None);
        assert_eq!(v("tcx=1"), None);
        assert_eq!(v("tc=first,tc=second").as_deref(), Some("first,tc=second"));
        assert_eq!(v("tc=first;tc=second").as_deref(), Some("first"));
    }

    #[test]
    fn remote_user_of_basic_credentials() {
        // "user:pass"
        assert_eq!(remote_user(b"Basic dXNlcjpwYXNz"), Some(b"user".to_vec()));
        assert_eq!(remote_user(b"basic dXNlcjpwYXNz"), Some(b"user".to_vec()));
        assert_eq!(remote_user(b"Bearer x"), None);
        assert_eq!(remote_user(b"Basic !!!"), None);
    }

    #[test]
    fn request_ids_are_32_hex_digits_and_differ() {
        let (a, b) = (request_id(), request_id());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }
}
