//! What is known about one request while it is served: the parsed head,
//! the connection it came on, the server and location that answer it, the
//! state the phases build up (the URI after rewrites, regex captures,
//! variables set by the configuration, what the upstream answered), and its
//! timing. Variables are read from here (see [`crate::server::core::vars`]).
//!
//! Reading a variable may change the request, as in nginx: a `map` keeps
//! the value it computed, and a `map`'s regular expression sets the
//! captures. Variables are read through `&Req` (templates are expanded
//! from everywhere, the access log included), so the captures and the
//! configuration-defined values sit in `RefCell`s; no borrow of them is
//! held while another variable is evaluated.

use std::borrow::Cow;
use std::cell::{Cell, OnceCell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use crate::config::inherit::LocConf;
use crate::config::model::{ListenAddr, Location, Server};
use crate::http::request::{Method, RequestHead, Version};

use crate::server::core::site::Site;
use crate::server::engine::client_addr::ClientAddr;

/// The values configuration-defined variables have taken in a request
/// (`set`, named captures, computed `map` and `split_clients` values), by
/// lowercase name.
pub type UserVars = Vec<(Arc<str>, Vec<u8>)>;

/// Response variables as first read in a subrequest tree, by lowercase
/// name; `None`: not found (see [`Req::tree_vars`]).
pub type TreeVars = Vec<(String, Option<Vec<u8>>)>;

/// A value a request shares with its subrequests, made on first use: most
/// requests never set a variable or read `$request_id`, and then allocate
/// nothing for them.
#[derive(Debug)]
pub struct Shared<T>(OnceCell<Rc<T>>);

impl<T: Default> Shared<T> {
    /// Not made yet.
    pub fn new() -> Self {
        Shared(OnceCell::new())
    }

    /// The value, made now if it was not.
    pub fn get(&self) -> &T {
        self.0.get_or_init(Rc::default)
    }

    /// The value if it was made.
    pub fn peek(&self) -> Option<&T> {
        self.0.get().map(|v| &**v)
    }

    /// The same value for a subrequest (made now if it was not, so that
    /// what either sets later the other sees).
    pub fn share(&self) -> Self {
        Shared(OnceCell::from(self.0.get_or_init(Rc::default).clone()))
    }
}

impl<T: Default> Default for Shared<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// One request in flight.
pub struct Req<'a> {
    /// The parsed head.
    pub head: &'a RequestHead,
    /// The decoded, normalized path (`$uri`): the head's own until a
    /// rewrite or an internal redirect replaces it.
    pub uri: Cow<'a, str>,
    /// `$args` when a rewrite or `set $args` changed them; `None` keeps
    /// the head's.
    pub args: Option<Option<String>>,
    /// The client's address (`realip` may replace it).
    pub peer: ClientAddr,
    /// Our address on this connection.
    pub local: ListenAddr,
    /// The virtual server answering.
    pub server: &'a Server,
    /// The location the request is in (`None`: the server's own settings).
    pub location: Option<&'a Location>,
    /// The settings in force where the request is.
    pub conf: &'a LocConf,
    /// The connection's serial number (`$connection`, `*N` in the error log).
    pub conn_no: u64,
    /// How many requests this connection has carried, this one included.
    pub conn_requests: u64,
    /// When the connection was accepted (`$connection_time`).
    pub conn_start: Instant,
    /// What the connection's TLS handshake negotiated (`$https`,
    /// `$ssl_*`); `None` in cleartext.
    pub tls: Option<std::sync::Arc<crate::server::engine::tls::info::TlsInfo>>,
    /// Whether the request was read from TLS 1.3 early data, before the
    /// handshake completed (`$ssl_early_data`).
    pub early_data: bool,
    /// When the first byte of the request arrived (`$request_time`,
    /// `limit_rate`'s clock): nginx's `r->start_sec`/`start_msec`.
    pub start: Instant,
    /// When the request head was complete: time to first byte is measured
    /// from here, so that a client slow to send its head does not count as
    /// a slow server.
    pub head_read: Instant,
    /// The request head's length in bytes (`$request_length` adds the body).
    pub head_len: usize,
    /// Whether the request arrived behind another one in the same read
    /// (`$pipe`).
    pub pipelined: bool,
    /// An internal redirect or a rewrite changed the URI (nginx's
    /// `r->internal`): the client's request target no longer names it.
    pub internal: bool,
    /// The configuration generation serving the request (variable
    /// definitions, the error log).
    pub site: &'a Site,
    /// The captures of the last regular expression that matched (nginx's
    /// `r->captures`); a failed `rewrite` or `if` match clears them.
    pub captures: RefCell<Option<Captures>>,
    /// Values of configuration-defined variables computed or set so far;
    /// a subrequest shares its parent's (nginx's `sr->variables =
    /// r->variables`).
    pub user_vars: Shared<RefCell<UserVars>>,
    /// How deep variable evaluation is nested (a `map` whose value reads
    /// another `map` …), against cycles.
    pub var_depth: Cell<u32>,
    /// Whether the URI is still the one the location was found for (nginx's
    /// `r->valid_location`): a `rewrite … break` or `break` after a
    /// rewrite clears it, and the proxy then sends the URI as it is.
    pub valid_location: bool,
    /// `$limit_rate` as `set` it, in bytes per second.
    pub limit_rate: Option<u64>,
    /// `$request_id`, made on first use; shared with subrequests, as
    /// nginx's cached variable value is.
    pub request_id: Shared<OnceCell<String>>,
    /// The response variables nginx computes once for a whole subrequest
    /// tree (`$sent_http_*`, `$sent_trailer_*`, `$request_completion`: cacheable
    /// ones in the `r->variables` a subrequest shares with its parent), as
    /// first read with a response, by lowercase name. Made when a
    /// subrequest is: a request without any computes them each time, the
    /// same values.
    pub tree_vars: Shared<RefCell<TreeVars>>,
    /// `$realpath_root`, resolved (through the file layer) when a location
    /// is entered and the configuration uses it.
    pub realpath_root: Option<String>,
    /// What the request body became, once read (`$request_body`,
    /// `$request_body_file`, `$request_length`).
    pub body: BodyVars,
    /// What the upstream exchanges of this request were (`$upstream_*`).
    pub upstream: UpstreamVars,
    /// `Some` for a subrequest: what it inherits from the request that
    /// made it (see [`crate::server::core::subrequest`]); `None` for the main request.
    pub sub: Option<crate::server::core::subrequest::SubState>,
    /// What the access and limit modules decided, and the `limit_conn`
    /// counts the request holds until it is dropped.
    pub access: crate::server::core::hooks::access::ReqAccess,
    /// The trailers made so far at the end of the body
    /// (`$sent_trailer_*`).
    pub trailers: RefCell<Vec<(String, String)>>,
    /// `$uri` names the file under a regex location's `alias` (nginx's
    /// `r->add_uri_to_alias`, set by `try_files`).
    pub add_uri_to_alias: bool,
}

/// The captures of a regular expression match: the subject and the spans,
/// as nginx keeps `r->captures` and `r->captures_data`.
#[derive(Clone, Debug, Default)]
pub struct Captures {
    /// The string matched.
    pub subject: String,
    /// Each group's span in `subject` (group 0 is the whole match).
    pub groups: Vec<Option<(usize, usize)>>,
}

impl Captures {
    /// Capture `n` (`$n`), empty when the group did not take part.
    pub fn get(&self, n: usize) -> &str {
        match self.groups.get(n) {
            Some(Some((a, b))) => &self.subject[*a..*b],
            _ => "",
        }
    }
}

/// Sets (or adds) a configuration variable's value.
pub fn set_user_var(vars: &mut UserVars, name: &str, value: Vec<u8>) {
    match vars.iter_mut().find(|(n, _)| &**n == name) {
        Some(slot) => slot.1 = value,
        None => vars.push((Arc::from(name), value)),
    }
}

/// What the request body became.
#[derive(Clone, Debug, Default)]
pub struct BodyVars {
    /// Bytes of body received (for `$request_length`).
    pub received: u64,
    /// The body, when it was read whole into memory.
    pub in_memory: Option<Arc<Vec<u8>>>,
    /// The file the body was written to.
    pub file: Option<Arc<std::path::Path>>,
}

/// One upstream exchange, for the `$upstream_*` variables.
#[derive(Clone, Debug, Default)]
pub struct UpstreamTry {
    /// `$upstream_addr`: the peer's name, or the upstream group's name when
    /// no peer was available.
    pub addr: std::sync::Arc<str>,
    /// `$upstream_status`; `None` prints `-` (nothing received).
    pub status: Option<u16>,
    /// Seconds with the peer (`$upstream_response_time`).
    pub response_time: Option<f64>,
    /// Seconds to connect (`$upstream_connect_time`).
    pub connect_time: Option<f64>,
    /// Seconds to the response head (`$upstream_header_time`).
    pub header_time: Option<f64>,
    /// Body bytes received (`$upstream_response_length`).
    pub response_length: Option<u64>,
    /// Bytes received (`$upstream_bytes_received`).
    pub bytes_received: u64,
    /// Bytes sent (`$upstream_bytes_sent`).
    pub bytes_sent: u64,
    /// The figures only the end of the body gives, shared with the body
    /// stream (for the try whose response was passed on).
    pub live: Option<std::rc::Rc<crate::server::upstream::source::Live>>,
}

/// The upstream side of a request: every try, and the response head of the
/// last one (for `$upstream_http_*`).
#[derive(Clone, Debug, Default)]
pub struct UpstreamVars {
    /// `$proxy_host`.
    pub proxy_host: Option<std::sync::Arc<str>>,
    /// `$proxy_port`: the port as the URL wrote it (see
    /// [`crate::config::proxy_url::ProxyVars::port`]).
    pub proxy_port: Option<std::sync::Arc<str>>,
    /// The upstream is spoken to over TLS (`https://`): nginx's
    /// `u->schema`, which the error log's `upstream: "…"` begins with.
    pub https: bool,
    /// Every try, in order; a new group after an internal redirect is
    /// separated by `" : "` as nginx does (see `group_starts`).
    pub tries: Vec<UpstreamTry>,
    /// Indexes in `tries` where a new upstream group began (the first
    /// group, at 0, is not marked).
    pub group_starts: Vec<usize>,
    /// The last response's header fields, as received (one buffer: a
    /// response's fields cost two allocations, not two each).
    pub headers: crate::upstream::head::Headers,
    /// The last response's trailer fields.
    pub trailers: Vec<(String, Vec<u8>)>,
    /// `$upstream_cache_status`, when a cache was consulted.
    pub cache_status: Option<&'static str>,
    /// The length of the body sent upstream, when known
    /// (`$proxy_internal_body_length`).
    pub body_length: Option<u64>,
    /// Whether the body goes upstream chunked (`$proxy_internal_chunked`).
    pub body_chunked: bool,
    /// A stale cache entry was served: refresh it after the response
    /// (`proxy_cache_background_update`).
    pub background_update: bool,
    /// This run of the proxy is that refresh: no client waits for it.
    pub background: bool,
    /// Header fields of an `X-Accel-Redirect` response that the response
    /// of the URI it names keeps (nginx copies its `redirect` fields:
    /// `Content-Type`, `Set-Cookie`, `Content-Disposition`,
    /// `Cache-Control`, `Expires`, `Accept-Ranges`).
    pub accel_kept: Vec<(String, String)>,
    /// An `X-Accel-Redirect` turned the method into `GET`
    /// (`$request_method`).
    pub accel_get: bool,
    /// Turns `true` when the cache fill this request started has ended
    /// (a background update waits for it before the connection goes on).
    pub fill_done: Option<tokio::sync::watch::Receiver<bool>>,
    /// What the handler left to do once the response is sent, before the
    /// connection goes on (the upstream engine registers it: a cache
    /// fill's rename, a background update); see [`AfterResponse`].
    pub after_response: Option<AfterResponse>,
}

/// Work a handler registers to run after the response is sent and
/// before the connection goes on, with the request, the client's socket
/// and read buffer, and the bytes the response took: the connection runs
/// it without knowing what it is.
pub type AfterResponse =
    for<'x, 's> fn(
        &'s super::site::Site,
        &'x mut Req<'s>,
        &'x crate::io::client_stream::ClientStream,
        &'x mut Vec<u8>,
        u64,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + 'x>>;

/// What was sent, for the access log.
#[derive(Clone, Copy, Debug, Default)]
pub struct Sent {
    /// The status code sent.
    pub status: u16,
    /// Bytes of the response body written (`$body_bytes_sent`).
    pub body_bytes: u64,
    /// All bytes written, head included (`$bytes_sent`).
    pub bytes: u64,
    /// Whether the response was sent completely (`$request_completion`).
    pub complete: bool,
}

impl<'a> Req<'a> {
    /// A request at the start of its walk: in `server`, no location yet.
    pub fn new(
        site: &'a Site,
        head: &'a RequestHead,
        server: &'a Server,
        conn: &crate::server::engine::conn_info::ConnInfo,
        conn_requests: u64,
        start: Instant,
        head_len: usize,
    ) -> Req<'a> {
        Req {
            head,
            uri: head.uri.path_lossy(),
            args: None,
            peer: conn.peer.clone(),
            local: conn.local.clone(),
            server,
            location: None,
            conf: &server.conf,
            conn_no: conn.conn_no,
            conn_requests,
            conn_start: conn.accepted,
            tls: conn.tls.clone(),
            early_data: false,
            start,
            head_read: crate::metrics::timed::now(),
            head_len,
            pipelined: false,
            internal: false,
            site,
            captures: RefCell::new(None),
            user_vars: Shared::new(),
            var_depth: Cell::new(0),
            valid_location: true,
            limit_rate: None,
            request_id: Shared::new(),
            tree_vars: Shared::new(),
            realpath_root: None,
            body: BodyVars::default(),
            upstream: UpstreamVars::default(),
            sub: None,
            access: crate::server::core::hooks::access::ReqAccess::default(),
            trailers: RefCell::new(Vec::new()),
            add_uri_to_alias: false,
        }
    }

    /// A subrequest of this request for `uri` with `args` (nginx's
    /// `ngx_http_subrequest`): the same connection, server, head (so
    /// `$request`, `$request_uri`, `$http_*` are the main request's),
    /// request body and variables; its own URI, arguments, captures,
    /// location and upstream state; internal, so `internal` locations
    /// answer it.
    pub fn subrequest(
        &self,
        uri: String,
        args: Option<String>,
        sub: crate::server::core::subrequest::SubState,
    ) -> Req<'a> {
        Req {
            head: self.head,
            uri: Cow::Owned(uri),
            args: Some(args),
            peer: self.peer.clone(),
            local: self.local.clone(),
            server: self.server,
            location: None,
            conf: &self.server.conf,
            conn_no: self.conn_no,
            conn_requests: self.conn_requests,
            conn_start: self.conn_start,
            tls: self.tls.clone(),
            early_data: self.early_data,
            start: crate::metrics::timed::now(),
            head_read: self.head_read,
            head_len: self.head_len,
            // nginx's `sr->pipeline` is never set (`$pipe` is `.`).
            pipelined: false,
            internal: true,
            site: self.site,
            captures: RefCell::new(None),
            user_vars: self.user_vars.share(),
            var_depth: Cell::new(0),
            valid_location: true,
            limit_rate: None,
            request_id: self.request_id.share(),
            tree_vars: self.tree_vars.share(),
            realpath_root: None,
            body: self.body.clone(),
            upstream: UpstreamVars::default(),
            sub: Some(sub),
            // nginx runs no access phase for a subrequest.
            access: crate::server::core::hooks::access::ReqAccess::default(),
            trailers: RefCell::new(Vec::new()),
            add_uri_to_alias: false,
        }
    }

    /// The background update of a stale cache entry this request was
    /// answered with (`proxy_cache_background_update`; nginx's
    /// `ngx_http_subrequest` with `NGX_HTTP_SUBREQUEST_CLONE |
    /// NGX_HTTP_SUBREQUEST_BACKGROUND`): a subrequest that keeps this
    /// request's URI, arguments, method, location, captures and variables,
    /// with an upstream state of its own, so that this request's
    /// `$upstream_*` stay its own for its log line written after it.
    pub fn background_clone(&self) -> Req<'a> {
        let remaining = match &self.sub {
            Some(s) => s.remaining,
            None => crate::server::core::subrequest::MAX_SUBREQUESTS + 1,
        };
        let state = crate::server::core::subrequest::SubState {
            remaining: remaining.saturating_sub(1),
            in_memory: false,
            ssi: crate::server::core::subrequest::shared_ssi(self),
            is_clone: true,
        };
        let mut sr = self.subrequest(String::new(), None, state);
        sr.uri = self.uri.clone();
        sr.args = self.args.clone();
        sr.location = self.location;
        sr.conf = self.conf;
        sr.internal = self.internal;
        sr.valid_location = self.valid_location;
        sr.captures = RefCell::new(self.captures.borrow().clone());
        sr.realpath_root = self.realpath_root.clone();
        sr.add_uri_to_alias = self.add_uri_to_alias;
        sr.upstream.background = true;
        sr
    }

    /// Whether this is the main request (the client's), not a subrequest.
    pub fn is_main(&self) -> bool {
        self.sub.is_none()
    }

    /// The method the request is served with: the client's, or `GET` for
    /// a subrequest that is no clone (nginx's `sr->method`;
    /// `$request_method` stays the main request's).
    pub fn method(&self) -> &Method {
        match &self.sub {
            Some(s) if !s.is_clone => &Method::Get,
            _ => &self.head.method,
        }
    }

    /// The error log of where the request is served (its location's
    /// `error_log`, else the server's, http's or the main one).
    pub fn error_log(&self) -> &crate::log::ErrorLog {
        &self.conf.error_log.log
    }

    /// Whether the request target as received still names this request
    /// (nginx's `r->valid_unparsed_uri`): not after a rewrite or an
    /// internal redirect, nor once `set $args` replaced the arguments.
    pub fn valid_unparsed_uri(&self) -> bool {
        !self.internal && self.args.is_none()
    }

    /// `$args`: a rewrite's, else the head's.
    pub fn args(&self) -> Option<Cow<'_, str>> {
        match &self.args {
            Some(a) => a.as_deref().map(Cow::Borrowed),
            None => self.head.uri.args.as_deref().map(String::from_utf8_lossy),
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
            None => Cow::Owned(self.local.host_text()),
        }
    }

    /// The request line as sent (`$request`).
    pub fn request_line(&self) -> String {
        let mut c =
            crate::log::context::Context::with_capacity(self.head.uri.request_uri.len() + 20);
        self.push_request_line(&mut c);
        c.finish()
    }

    /// Appends the request line (see [`Req::request_line`]) to `c`.
    fn push_request_line(&self, c: &mut crate::log::context::Context) {
        let version = match self.head.version {
            Version::Http09 => "",
            Version::Http10 => " HTTP/1.0",
            Version::Http11 => " HTTP/1.1",
        };
        c.str(self.head.method.as_str())
            .str(" ")
            .bytes(&self.head.uri.request_uri)
            .str(version);
    }

    /// The error log's context suffix: `, client: …, server: …, request: "…", host: "…"`.
    pub fn log_context(&self) -> crate::log::context::LogText {
        self.context_with(self.server.name(), None)
    }

    /// The error log's context for a line about upstream `peer` and `uri`
    /// (`…, upstream: "http://PEER/URI", host: "…"`), as the proxy module
    /// writes it; its server is the first name as written.
    pub fn upstream_context(&self, peer: &str, uri: &[u8]) -> crate::log::context::LogText {
        let server = self.server.names.first().map_or("", String::as_str);
        self.context_with(server, Some((peer, uri)))
    }

    /// `log_context` and `upstream_context`: one allocation, no formatting
    /// machinery (the proxy builds one per upstream attempt).
    fn context_with(
        &self,
        server: &str,
        upstream: Option<(&str, &[u8])>,
    ) -> crate::log::context::LogText {
        let host = self.head.header("host");
        let upstream_len = upstream.map_or(0, |(p, u)| p.len() + u.len() + 24);
        let capacity = 64
            + server.len()
            + self.head.uri.request_uri.len()
            + self.sub.as_ref().map_or(0, |_| self.uri.len() + 16)
            + upstream_len
            + host.map_or(0, |h| h.len() + 10);
        let mut c = crate::log::context::Context::with_capacity(capacity);
        c.str(", client: ");
        match self.peer.ip() {
            Some(ip) => c.ip(ip),
            // `unix:` and the peer's path, if any.
            None => c.str(&self.peer.to_string()),
        };
        c.str(", server: ").str(server).str(", request: \"");
        self.push_request_line(&mut c);
        c.str("\"");
        if self.sub.is_some() {
            c.str(", subrequest: \"").str(&self.uri).str("\"");
        }
        if let Some((peer, uri)) = upstream {
            let scheme = if self.upstream.https {
                "https://"
            } else {
                "http://"
            };
            c.str(", upstream: \"")
                .str(scheme)
                .str(peer)
                .bytes(uri)
                .str("\"");
        }
        if let Some(h) = host {
            c.str(", host: \"").bytes(h).str("\"");
        }
        c.finish_lazy()
    }

    /// Moves the request into `location` (or the server's own settings).
    pub fn enter(&mut self, location: Option<&'a Location>) {
        // A `limit_except` block's settings serve the methods it does not
        // let through.
        let location = location.map(|l| l.for_method(self.head.method.as_str()));
        self.location = location;
        self.conf = location.map_or(&self.server.conf, |l| &l.conf);
    }

    /// Runs `re` on `subject` as nginx's `ngx_http_regex_exec`: on a match,
    /// the captures become the request's (`$1` … `$9`) and named groups set
    /// their variables; without a match nothing changes.
    pub fn regex_exec(&self, re: &crate::config::regex::Regex, subject: &str) -> bool {
        if re.captures_len() == 1 {
            if !re.is_match(subject) {
                return false;
            }
            self.matched_without_groups();
            return true;
        }
        let Some(groups) = re.captures(subject) else {
            return false;
        };
        let names = re.capture_names();
        if names.iter().any(Option::is_some) {
            let mut vars = self.user_vars.get().borrow_mut();
            for (i, name) in names.iter().enumerate() {
                let Some(name) = name else { continue };
                let value = groups
                    .get(i)
                    .copied()
                    .flatten()
                    .map_or(&b""[..], |(a, b)| &subject.as_bytes()[a..b]);
                set_user_var(&mut vars, &name.to_ascii_lowercase(), value.to_vec());
            }
        }
        *self.captures.borrow_mut() = Some(Captures {
            subject: subject.to_string(),
            groups,
        });
        true
    }

    /// Records a match of an expression without groups: it leaves no
    /// captures to read (nginx keeps only `$0`, which no template can
    /// name), and allocates nothing.
    pub fn matched_without_groups(&self) {
        *self.captures.borrow_mut() = Some(Captures::default());
    }

    /// The value `set`, a capture or a computed `map` gave `name` so far.
    pub fn user_var(&self, name: &str) -> Option<Vec<u8>> {
        let vars = self.user_vars.peek()?.borrow();
        vars.iter()
            .find(|(n, _)| &**n == name)
            .map(|(_, v)| v.clone())
    }

    /// Sets a configuration-defined variable for the rest of the request.
    pub fn set_user_var(&self, name: &str, value: Vec<u8>) {
        set_user_var(&mut self.user_vars.get().borrow_mut(), name, value);
    }

    /// Whether the request's path was written with `%` escapes (nginx's
    /// `r->quoted_uri`): captures copied into arguments or redirects are
    /// then escaped again.
    pub fn quoted_uri(&self) -> bool {
        self.raw_path().contains(&b'%')
    }

    /// Whether the request's path holds a `+`, written or escaped (nginx's
    /// `r->plus_in_uri`).
    pub fn plus_in_uri(&self) -> bool {
        self.raw_path().contains(&b'+') || self.head.uri.path.contains(&b'+')
    }

    /// The path of the request target as sent, before `?`.
    fn raw_path(&self) -> &[u8] {
        let t = &self.head.uri.request_uri[..];
        let end = t.iter().position(|&c| c == b'?' || c == b'#');
        &t[..end.unwrap_or(t.len())]
    }
}
