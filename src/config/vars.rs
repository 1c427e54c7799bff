//! What a `$name` in the configuration means, decided once at load time.
//!
//! nginx compiles every variable reference to an index when it reads the
//! configuration and refuses a name it does not know (`unknown "x"
//! variable`). nowait does the same: a [`Var`] is a built-in variable, a
//! member of a family (`$http_user_agent`, `$arg_id` …), a regex capture
//! (`$1`…`$9`), or a name the configuration defines itself (`set`, `map`,
//! `split_clients`, a named capture) — checked once the whole file is read.
//! There is no fourth kind: a variable nowait does not implement is an error
//! at start-up, never an empty value at run time.
//!
//! Evaluation belongs to the server (`server::core::vars`); this module only names.

use std::fmt;
use std::sync::Arc;

/// A variable reference.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Var {
    /// A built-in variable.
    Builtin(Builtin),
    /// A member of a family: `$http_x_forwarded_for` is
    /// `Family(Family::Http, "x_forwarded_for")`.
    Family(Family, Arc<str>),
    /// `$1` … `$9`: a capture of the last regular expression that matched.
    Capture(u8),
    /// A variable the configuration defines (`set`, `map`,
    /// `split_clients`, a named capture): its name.
    Named(Arc<str>),
}

/// Families of variables named by a prefix and a field name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    /// `$http_NAME`: a request header field (`_` is `-`, any case).
    Http,
    /// `$arg_NAME`: a query-string argument.
    Arg,
    /// `$cookie_NAME`: a cookie of the request.
    Cookie,
    /// `$sent_http_NAME`: a response header field as sent.
    SentHttp,
    /// `$sent_trailer_NAME`: a trailer field as sent.
    SentTrailer,
    /// `$upstream_http_NAME`: a header field of the upstream's response.
    UpstreamHttp,
    /// `$upstream_cookie_NAME`: a cookie the upstream set.
    UpstreamCookie,
    /// `$upstream_trailer_NAME`: a trailer of the upstream's response.
    UpstreamTrailer,
}

impl Family {
    /// Every family with its prefix, longest first where one prefix
    /// begins another (`upstream_http_` before `http_` is not needed: a
    /// name matches one prefix from its start).
    pub const ALL: [(Family, &'static str); 8] = [
        (Family::Http, "http_"),
        (Family::Arg, "arg_"),
        (Family::Cookie, "cookie_"),
        (Family::SentHttp, "sent_http_"),
        (Family::SentTrailer, "sent_trailer_"),
        (Family::UpstreamHttp, "upstream_http_"),
        (Family::UpstreamCookie, "upstream_cookie_"),
        (Family::UpstreamTrailer, "upstream_trailer_"),
    ];

    /// The family's prefix (`http_`).
    pub fn prefix(self) -> &'static str {
        Family::ALL
            .iter()
            .find(|(f, _)| *f == self)
            .map_or("", |(_, p)| p)
    }
}

macro_rules! builtins {
    ($( $(#[$m:meta])* $variant:ident = $name:literal, )*) => {
        /// The built-in variables nowait implements, as nginx 1.22 defines them.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Builtin {
            $( $(#[$m])* $variant, )*
        }

        impl Builtin {
            /// Every built-in, for the reference and tests.
            pub const ALL: &'static [Builtin] = &[$( Builtin::$variant, )*];

            /// The variable's name, without `$`.
            pub fn name(self) -> &'static str {
                match self {
                    $( Builtin::$variant => $name, )*
                }
            }

            /// The built-in called `name`.
            pub fn from_name(name: &str) -> Option<Builtin> {
                match name {
                    $( $name => Some(Builtin::$variant), )*
                    _ => None,
                }
            }
        }
    };
}

builtins! {
    /// The query string.
    Args = "args",
    /// Same as `$args`.
    QueryString = "query_string",
    /// `?` when there are arguments, else empty.
    IsArgs = "is_args",
    /// The current, normalized URI (changed by rewrites and redirects).
    Uri = "uri",
    /// Same as `$uri`.
    DocumentUri = "document_uri",
    /// The original request target, with arguments.
    RequestUri = "request_uri",
    /// The request method.
    RequestMethod = "request_method",
    /// The whole request line.
    Request = "request",
    /// The host: request line's, else `Host`, else the server name.
    Host = "host",
    /// The machine's host name.
    Hostname = "hostname",
    /// The client's address.
    RemoteAddr = "remote_addr",
    /// The client's port.
    RemotePort = "remote_port",
    /// The client's address in binary (4 or 16 bytes).
    BinaryRemoteAddr = "binary_remote_addr",
    /// The address the request came in on.
    ServerAddr = "server_addr",
    /// The port the request came in on.
    ServerPort = "server_port",
    /// The name of the server that answers.
    ServerName = "server_name",
    /// Empty when the `Referer` is one `valid_referers` lists, else `1`.
    InvalidReferer = "invalid_referer",
    /// `secure_link`'s verdict (`1`, `0` expired, not found), or the old
    /// form's link.
    SecureLink = "secure_link",
    /// The expiry time `secure_link` was given.
    SecureLinkExpires = "secure_link_expires",
    /// `HTTP/1.0` or `HTTP/1.1`.
    ServerProtocol = "server_protocol",
    /// `http`.
    Scheme = "scheme",
    /// `on` for TLS connections, else empty.
    Https = "https",
    /// The TLS protocol: `TLSv1.2`, `TLSv1.3`.
    SslProtocol = "ssl_protocol",
    /// The cipher suite, by OpenSSL's name.
    SslCipher = "ssl_cipher",
    /// The suites the client offered, by OpenSSL's names.
    SslCiphers = "ssl_ciphers",
    /// The groups the client offered, by OpenSSL's names.
    SslCurves = "ssl_curves",
    /// The server name the client sent (SNI).
    SslServerName = "ssl_server_name",
    /// `r` when the TLS session was resumed, else `.`.
    SslSessionReused = "ssl_session_reused",
    /// The TLS session's id, in hex (empty when OpenSSL would give the
    /// session none).
    SslSessionId = "ssl_session_id",
    /// The key-exchange group, by OpenSSL's name.
    SslCurve = "ssl_curve",
    /// The protocol agreed on by ALPN.
    SslAlpnProtocol = "ssl_alpn_protocol",
    /// `1` while the request is read from TLS 1.3 early data.
    SslEarlyData = "ssl_early_data",
    /// `NONE`, `SUCCESS` or `FAILED:reason`: the client certificate's
    /// verification.
    SslClientVerify = "ssl_client_verify",
    /// The client certificate's subject, RFC 2253.
    SslClientSDn = "ssl_client_s_dn",
    /// The client certificate's issuer, RFC 2253.
    SslClientIDn = "ssl_client_i_dn",
    /// The client certificate's subject, `/C=…/O=…`.
    SslClientSDnLegacy = "ssl_client_s_dn_legacy",
    /// The client certificate's issuer, `/C=…/O=…`.
    SslClientIDnLegacy = "ssl_client_i_dn_legacy",
    /// The client certificate's serial number, upper-case hex.
    SslClientSerial = "ssl_client_serial",
    /// The client certificate's SHA-1, lower-case hex.
    SslClientFingerprint = "ssl_client_fingerprint",
    /// The client certificate in PEM, a tab after each line break.
    SslClientCert = "ssl_client_cert",
    /// The client certificate in PEM.
    SslClientRawCert = "ssl_client_raw_cert",
    /// The client certificate in PEM, URL-encoded.
    SslClientEscapedCert = "ssl_client_escaped_cert",
    /// The client certificate's start date.
    SslClientVStart = "ssl_client_v_start",
    /// The client certificate's end date.
    SslClientVEnd = "ssl_client_v_end",
    /// Days until the client certificate expires.
    SslClientVRemain = "ssl_client_v_remain",
    /// nginx's ACME module: the server's certificate chain as
    /// `data:PEM`, for `ssl_certificate`; not found in a server without
    /// `acme_certificate`.
    AcmeCertificate = "acme_certificate",
    /// nginx's ACME module: the certificate's key as `data:PEM`, for
    /// `ssl_certificate_key`.
    AcmeCertificateKey = "acme_certificate_key",
    /// The connection's serial number.
    Connection = "connection",
    /// Requests made on this connection so far.
    ConnectionRequests = "connection_requests",
    /// Seconds since the connection was accepted, with milliseconds.
    ConnectionTime = "connection_time",
    /// Bytes of the request (line, head and body).
    RequestLength = "request_length",
    /// Seconds since the first byte of the request, with milliseconds.
    RequestTime = "request_time",
    /// The time in seconds with milliseconds.
    Msec = "msec",
    /// Local time in the common log format.
    TimeLocal = "time_local",
    /// Local time in ISO 8601.
    TimeIso8601 = "time_iso8601",
    /// The process id.
    Pid = "pid",
    /// The version.
    NginxVersion = "nginx_version",
    /// The user name of basic authentication.
    RemoteUser = "remote_user",
    /// The `Content-Length` request header.
    ContentLength = "content_length",
    /// The `Content-Type` request header.
    ContentType = "content_type",
    /// The response status.
    Status = "status",
    /// Bytes of the response body sent.
    BodyBytesSent = "body_bytes_sent",
    /// Bytes sent to the client.
    BytesSent = "bytes_sent",
    /// `root` or `alias` of the current request.
    DocumentRoot = "document_root",
    /// `$document_root` with symbolic links resolved.
    RealpathRoot = "realpath_root",
    /// The file path for the current URI (`root`/`alias` + URI).
    RequestFilename = "request_filename",
    /// A random identifier of the request (32 hex digits).
    RequestId = "request_id",
    /// The request body, when it was read into memory.
    RequestBody = "request_body",
    /// The file holding the request body, when it was written to one.
    RequestBodyFile = "request_body_file",
    /// `OK` when the request completed, else empty.
    RequestCompletion = "request_completion",
    /// The rate limit of the response (`limit_rate`).
    LimitRate = "limit_rate",
    /// `p` when the request was pipelined, else `.`.
    Pipe = "pipe",
    /// The upstream host `proxy_pass` names (and its port unless 80).
    ProxyHost = "proxy_host",
    /// The upstream port `proxy_pass` names.
    ProxyPort = "proxy_port",
    /// `X-Forwarded-For` with the client's address appended.
    ProxyAddXForwardedFor = "proxy_add_x_forwarded_for",
    /// Addresses of the upstream servers tried.
    UpstreamAddr = "upstream_addr",
    /// Statuses the upstream servers answered.
    UpstreamStatus = "upstream_status",
    /// Time spent with each upstream server.
    UpstreamResponseTime = "upstream_response_time",
    /// Time spent connecting to each upstream server.
    UpstreamConnectTime = "upstream_connect_time",
    /// Time until each upstream server's response head.
    UpstreamHeaderTime = "upstream_header_time",
    /// Body length of each upstream response.
    UpstreamResponseLength = "upstream_response_length",
    /// Bytes received from each upstream server.
    UpstreamBytesReceived = "upstream_bytes_received",
    /// Bytes sent to each upstream server.
    UpstreamBytesSent = "upstream_bytes_sent",
    /// The cache's verdict (`HIT`, `MISS` …); not found when the request
    /// used no cache.
    UpstreamCacheStatus = "upstream_cache_status",
    /// The length of the body sent upstream (nginx's internal variable
    /// behind the default `Content-Length` of proxied requests).
    ProxyInternalBodyLength = "proxy_internal_body_length",
    /// `chunked` when the body goes upstream chunked (the internal variable
    /// behind the default `Transfer-Encoding`).
    ProxyInternalChunked = "proxy_internal_chunked",
    /// The local time, as the SSI module formats it (its `timefmt`).
    DateLocal = "date_local",
    /// The time in GMT, as the SSI module formats it (its `timefmt`).
    DateGmt = "date_gmt",
    /// The connection's own address when `realip` replaced `$remote_addr`.
    RealipRemoteAddr = "realip_remote_addr",
    /// The connection's own port when `realip` replaced `$remote_port`.
    RealipRemotePort = "realip_remote_port",
    /// What `limit_req` decided: `PASSED`, `DELAYED`, `REJECTED` …
    LimitReqStatus = "limit_req_status",
    /// What `limit_conn` decided: `PASSED`, `REJECTED` …
    LimitConnStatus = "limit_conn_status",
    /// Open client connections (`stub_status`'s "Active connections").
    ConnectionsActive = "connections_active",
    /// Connections reading a request head.
    ConnectionsReading = "connections_reading",
    /// Connections whose request is being answered.
    ConnectionsWriting = "connections_writing",
    /// Idle connections waiting for a request.
    ConnectionsWaiting = "connections_waiting",
}

impl Var {
    /// What `name` (without `$`) means, before the configuration's own
    /// definitions are known: unknown names are [`Var::Named`] and checked
    /// later. Names are case-insensitive, as nginx keeps them lowercased
    /// (`$URI` is `$uri`).
    pub fn from_name(name: &str) -> Var {
        let lower;
        let name = if name.bytes().any(|c| c.is_ascii_uppercase()) {
            lower = name.to_ascii_lowercase();
            lower.as_str()
        } else {
            name
        };
        if let Some(b) = Builtin::from_name(name) {
            return Var::Builtin(b);
        }
        for (family, prefix) in Family::ALL {
            // `$arg_` alone is the family's member with an empty name (never
            // found), as nginx's prefix match makes it.
            if let Some(rest) = name.strip_prefix(prefix) {
                return Var::Family(family, Arc::from(rest));
            }
        }
        Var::Named(Arc::from(name))
    }

    /// The name as written (without `$`).
    pub fn name(&self) -> String {
        match self {
            Var::Builtin(b) => b.name().to_string(),
            Var::Family(f, rest) => format!("{}{rest}", f.prefix()),
            Var::Capture(n) => n.to_string(),
            Var::Named(n) => n.to_string(),
        }
    }
}

impl fmt::Display for Var {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve() {
        assert_eq!(Var::from_name("uri"), Var::Builtin(Builtin::Uri));
        assert_eq!(
            Var::from_name("http_user_agent"),
            Var::Family(Family::Http, Arc::from("user_agent"))
        );
        assert_eq!(
            Var::from_name("upstream_http_x"),
            Var::Family(Family::UpstreamHttp, Arc::from("x"))
        );
        assert_eq!(
            Var::from_name("http_"),
            Var::Family(Family::Http, Arc::from(""))
        );
        assert_eq!(Var::from_name("disk"), Var::Named(Arc::from("disk")));
        assert_eq!(Var::from_name("URI"), Var::Builtin(Builtin::Uri));
        assert_eq!(Var::from_name("Disk"), Var::Named(Arc::from("disk")));
    }

    #[test]
    fn every_builtin_round_trips() {
        for b in Builtin::ALL {
            assert_eq!(Builtin::from_name(b.name()), Some(*b));
            assert_eq!(Var::from_name(b.name()).name(), b.name());
        }
    }
}
