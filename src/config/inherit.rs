//! Settings inherited parent → child (http → server → location), each with its
//! default written once.
//!
//! A level records what its own block set (`…Set`, every field optional);
//! after the whole file is read, each level is resolved against its parent's
//! resolved values, and the http level against the defaults below. This is
//! nginx's create/merge of location configurations, as data.

use std::sync::Arc;
use std::time::Duration;

use super::access_model::{AccessRule, LimitConn, LimitReq, RealIpFrom, RealIpHeader, Satisfy};
use super::cache_model::{
    ALWAYS_CACHED_METHODS, DEFAULT_CACHE_LOCK_TIME, DEFAULT_PROXY_CACHE_KEY, DEFAULT_STORE_ACCESS,
};
#[cfg(doc)]
use super::cache_model::{DEFAULT_VALID_STATUSES, VALID_ANY};
pub use super::core_model::{
    DisableSymlinks, ErrorLogs, Expires, KeepaliveDisable, LingeringClose, OpenFileCache,
    OpenLogFileCache, ServerTokens, SizeValue,
};
use super::filter_model::{
    AutoindexFormat, CHARSET_DEFAULT_TYPES, CharsetSpec, DEFAULT_GZIP_BUFFERS, DEFAULT_MEM_LEVEL,
    GZIP_DEFAULT_TYPES, GzipHttpVersion, GzipProxied, GzipStatic, MAX_WINDOW_BITS,
};
pub use super::model::BodyInFile;
use super::model::{
    AccessLogs, AddHeader, Aio, ErrorPage, NextUpstream, ProxyHttpVersion, ProxyRedirect,
    ProxyStore, Root, Types,
};
use super::source::Loc;
use super::ssl_model::{
    CertName, DEFAULT_BUFFER_SIZE, DEFAULT_CIPHERS, DEFAULT_ECDH_CURVE, DEFAULT_PROXY_CIPHERS,
    NamedFile, OcspCacheZone, OcspCheck, Passwords, Protocols, SessionCache, VerifyClient,
};
use super::template::Template;
use super::type_list::TypeList;
pub use crate::http::conditional::IfModifiedSince;
use crate::io::temp::TempPath;
use crate::log::Level;

/// Declares a `Set` struct (what a level wrote) and its resolved twin with
/// defaults, and the merge between them.
macro_rules! inherited {
    (
        $(#[$sm:meta])* set $set:ident;
        $(#[$rm:meta])* resolved $res:ident {
            $( $(#[$fm:meta])* $field:ident : $ty:ty = $default:expr, )*
        }
    ) => {
        $(#[$sm])*
        #[derive(Clone, Debug, Default)]
        pub struct $set {
            $( $(#[$fm])* pub $field: Option<$ty>, )*
        }

        $(#[$rm])*
        #[derive(Clone, Debug)]
        pub struct $res {
            $( $(#[$fm])* pub $field: $ty, )*
        }

        impl Default for $res {
            fn default() -> Self {
                $res { $( $field: $default, )* }
            }
        }

        impl $set {
            /// Resolves this level against its parent's resolved values.
            pub fn resolve(&self, parent: &$res) -> $res {
                $res {
                    $( $field: match &self.$field {
                        Some(v) => v.clone(),
                        None => parent.$field.clone(),
                    }, )*
                }
            }
        }
    };
}

const KB: u64 = 1024;

/// nginx's `--http-client-body-temp-path` default, relative to the prefix.
pub const DEFAULT_CLIENT_BODY_TEMP_PATH: &str = "client_body_temp";
/// nginx's `--http-proxy-temp-path` default, relative to the prefix.
pub const DEFAULT_PROXY_TEMP_PATH: &str = "proxy_temp";
/// The levels of nginx's default proxy temp path (`ngx_http_proxy_temp_path`).
pub const DEFAULT_PROXY_TEMP_LEVELS: [u8; 2] = [1, 2];
const MB: u64 = 1024 * 1024;
/// One memory page on x86-64 Linux (`ngx_pagesize`): nginx sizes several
/// buffers by it.
pub const PAGE_SIZE: u64 = 4096;
/// nginx's default `proxy_max_temp_file_size` when nothing sets it.
pub const DEFAULT_PROXY_MAX_TEMP_FILE_SIZE: u64 = 1024 * MB;

inherited! {
    /// What one http, server or location block set of the inherited settings.
    set LocSet;
    /// The inherited settings in force for a location, after merging.
    resolved LocConf {
        /// `root` or `alias` (alias is never inherited: see the loader).
        root: Root = Root::Root(Template::literal("html")),
        /// `index`: files tried for a URI ending in `/`.
        index: Vec<Template> = vec![Template::literal("index.html")],
        /// `types`: extension → MIME type (nginx's three built-in types by default).
        types: Arc<Types> = Arc::new(Types::builtin()),
        /// `default_type`.
        default_type: Arc<str> = Arc::from("text/plain"),
        /// `access_log`.
        access_log: AccessLogs = AccessLogs::default_log(),
        /// `sendfile`.
        sendfile: bool = false,
        /// `sendfile_max_chunk` (nginx 1.21.4+ default 2m; 0 means unbounded).
        sendfile_max_chunk: u64 = 2 * MB,
        /// `directio`: files of at least this size are read with `O_DIRECT`
        /// (past the page cache), never sent with `sendfile`; `None` for
        /// `off`.
        directio: Option<u64> = None,
        /// `directio_alignment`: what offsets, lengths and buffers of an
        /// `O_DIRECT` read are aligned to.
        directio_alignment: u64 = 512,
        /// `tcp_nopush` (TCP_CORK while sending with sendfile).
        tcp_nopush: bool = false,
        /// `tcp_nodelay`.
        tcp_nodelay: bool = true,
        /// `keepalive_timeout` (0 disables keep-alive).
        keepalive_timeout: Duration = Duration::from_secs(75),
        /// `keepalive_requests`.
        keepalive_requests: u64 = 1000,
        /// `send_timeout`.
        send_timeout: Duration = Duration::from_secs(60),
        /// `server_tokens`: version (and build) in `Server` header and
        /// error pages.
        server_tokens: ServerTokens = ServerTokens::On,
        /// `aio`.
        aio: Aio = Aio::Off,
        /// `aio_fast_path` (nowait's): with `aio threads`, try each file
        /// operation on the loop in a form that cannot block first.
        aio_fast_path: bool = true,
        /// `aio_write`: temp-file and cache writes go to the pool under
        /// `aio threads`. nowait's default is on (nginx's is off): with it
        /// off, writes wait on the loop, which only the baseline wants.
        aio_write: bool = true,
        /// `client_body_temp_path`: where request bodies larger than the
        /// body buffer are written (made absolute by the loader).
        client_body_temp_path: TempPath = TempPath::new(DEFAULT_CLIENT_BODY_TEMP_PATH),
        /// `client_max_body_size` (0 disables the check).
        client_max_body_size: u64 = MB,
        /// `error_page`: all of a level's entries replace the parent's.
        error_pages: Vec<ErrorPage> = Vec::new(),
        /// `add_header`: all of a level's entries replace the parent's.
        add_headers: Vec<AddHeader> = Vec::new(),
        /// `proxy_cache ZONE`: the `keys_zone` name, possibly with variables
        /// (evaluated per request: an empty value or `off` means no cache
        /// for that request, as nginx's `ngx_http_upstream_cache_get`);
        /// `None`: `proxy_cache off`, or `proxy_store` is on at this level.
        /// A name without variables is known to name a `proxy_cache_path`.
        proxy_cache: Option<Template> = None,
        /// `proxy_cache_key` (default `$scheme$proxy_host$request_uri`).
        proxy_cache_key: Template = default_cache_key(),
        /// Whether no level wrote `proxy_cache_key`. nginx's real default
        /// key is not the documented template: it is the `proxy_pass` URL's
        /// scheme with `://`, then `$proxy_host`, then the URI sent
        /// upstream (`ngx_http_proxy_create_key`), e.g.
        /// `http://127.0.0.1:8080/x?a=1`; a cache shared with nginx must
        /// build that key when this is true.
        proxy_cache_key_is_default: bool = true,
        /// `proxy_cache_valid [code ...] time`: (statuses, time) in the order
        /// written; a level's entries replace its parent's. `TIME` alone is
        /// stored with [`DEFAULT_VALID_STATUSES`]; `any` is [`VALID_ANY`].
        proxy_cache_valid: Vec<(Vec<u16>, Duration)> = Vec::new(),
        /// `proxy_cache_methods`: the methods cached, in nginx's order
        /// (`GET`, `HEAD`, `POST`); `GET` and `HEAD` are always in it.
        proxy_cache_methods: Vec<String> = ALWAYS_CACHED_METHODS.map(String::from).to_vec(),
        /// `proxy_cache_convert_head`: a HEAD is sent upstream as GET so that
        /// its answer can be cached.
        proxy_cache_convert_head: bool = true,
        /// `proxy_cache_min_uses`: requests for a key before it is cached.
        proxy_cache_min_uses: u64 = 1,
        /// `proxy_cache_bypass`: the answer is not taken from the cache when
        /// any of these is non-empty and not `0`; a level's entries replace
        /// its parent's.
        proxy_cache_bypass: Vec<Template> = Vec::new(),
        /// `proxy_no_cache`: the answer is not saved when any of these is
        /// non-empty and not `0`; a level's entries replace its parent's.
        proxy_no_cache: Vec<Template> = Vec::new(),
        /// `proxy_cache_use_stale`: when a stale entry is served; `OFF`
        /// (the default) stands alone after merging. `ERROR` also covers
        /// "no live upstreams" (nginx adds `NGX_HTTP_UPSTREAM_FT_NOLIVE`);
        /// `NON_IDEMPOTENT` is accepted, as nginx's shared mask accepts it,
        /// and means nothing here.
        proxy_cache_use_stale: NextUpstream = NextUpstream::OFF,
        /// `proxy_cache_background_update`.
        proxy_cache_background_update: bool = false,
        /// `proxy_cache_revalidate`: expired entries are revalidated with
        /// `If-Modified-Since` and `If-None-Match`.
        proxy_cache_revalidate: bool = false,
        /// `proxy_cache_lock`: one request at a time fills an entry.
        proxy_cache_lock: bool = false,
        /// `proxy_cache_lock_timeout`: how long a request waits for the lock.
        proxy_cache_lock_timeout: Duration = DEFAULT_CACHE_LOCK_TIME,
        /// `proxy_cache_lock_age`: after this, another request may fill.
        proxy_cache_lock_age: Duration = DEFAULT_CACHE_LOCK_TIME,
        /// `proxy_cache_max_range_offset`: a range starting at or past this
        /// is proxied uncached; `None`: no limit.
        proxy_cache_max_range_offset: Option<u64> = None,
        /// `proxy_store`; `Off` when `proxy_cache` is on at this level.
        proxy_store: ProxyStore = ProxyStore::Off,
        /// `proxy_store_access`: the mode bits of stored files (0600).
        proxy_store_access: u32 = DEFAULT_STORE_ACCESS,
        /// `proxy_set_header`: all of a level's entries replace the parent's
        /// (the level's `LocSet` field is `Some` when it set any). nginx's
        /// own headers (`Host $proxy_host`, `Connection close`, the body
        /// length, and the empty `TE`, `Keep-Alive`, `Expect`, `Upgrade`)
        /// are not stored: the handler adds each one no entry names.
        proxy_set_header: Vec<(String, Template)> = Vec::new(),
        /// `proxy_hide_header`: hidden beyond nginx's own list (Date, Server,
        /// X-Pad, X-Accel-*); a level's entries replace the parent's.
        proxy_hide_header: Vec<String> = Vec::new(),
        /// `proxy_pass_header`: passed although hidden, by default or by
        /// `proxy_hide_header` (at this level or inherited).
        proxy_pass_header: Vec<String> = Vec::new(),
        /// `proxy_pass_request_headers`.
        proxy_pass_request_headers: bool = true,
        /// `proxy_pass_request_body`.
        proxy_pass_request_body: bool = true,
        /// `proxy_set_body`.
        proxy_set_body: Option<Template> = None,
        /// `proxy_method`.
        proxy_method: Option<Template> = None,
        /// `proxy_http_version`.
        proxy_http_version: ProxyHttpVersion = ProxyHttpVersion::V10,
        /// `proxy_redirect` (see [`ProxyRedirect`] for what `Default` becomes).
        proxy_redirect: ProxyRedirect = ProxyRedirect::Default,
        /// `proxy_ignore_headers`, spelled as nginx's list spells them.
        proxy_ignore_headers: Vec<String> = Vec::new(),
        /// `proxy_intercept_errors`.
        proxy_intercept_errors: bool = false,
        /// `proxy_buffering`.
        proxy_buffering: bool = true,
        /// `proxy_request_buffering`.
        proxy_request_buffering: bool = true,
        /// `proxy_buffer_size` (one page).
        proxy_buffer_size: u64 = PAGE_SIZE,
        /// `proxy_buffers`: (count, size), 8 pages.
        proxy_buffers: (u32, u64) = (8, PAGE_SIZE),
        /// `proxy_busy_buffers_size`; `None`: twice the larger of
        /// `proxy_buffer_size` and one buffer (see `LocConf::busy_buffers_size`).
        proxy_busy_buffers_size: Option<u64> = None,
        /// `proxy_max_temp_file_size` (0 disables temp files); `None`: 1024m.
        proxy_max_temp_file_size: Option<u64> = None,
        /// `proxy_temp_file_write_size`; `None`: as the busy buffers default.
        proxy_temp_file_write_size: Option<u64> = None,
        /// `proxy_temp_path` (made absolute by the loader; default levels 1 2).
        proxy_temp_path: TempPath = TempPath {
            path: std::path::PathBuf::from(DEFAULT_PROXY_TEMP_PATH),
            levels: DEFAULT_PROXY_TEMP_LEVELS.to_vec(),
        },
        /// `proxy_connect_timeout`.
        proxy_connect_timeout: Duration = Duration::from_secs(60),
        /// `proxy_read_timeout`.
        proxy_read_timeout: Duration = Duration::from_secs(60),
        /// `proxy_send_timeout`.
        proxy_send_timeout: Duration = Duration::from_secs(60),
        /// `proxy_limit_rate` in bytes per second (0: none).
        proxy_limit_rate: u64 = 0,
        /// `proxy_next_upstream` (`off` stands alone after merging).
        proxy_next_upstream: NextUpstream = NextUpstream::ERROR.union(NextUpstream::TIMEOUT),
        /// `proxy_next_upstream_tries` (0: no limit).
        proxy_next_upstream_tries: u32 = 0,
        /// `proxy_next_upstream_timeout` (0: no limit).
        proxy_next_upstream_timeout: Duration = Duration::ZERO,
        /// `proxy_force_ranges`.
        proxy_force_ranges: bool = false,
        /// `proxy_socket_keepalive`: SO_KEEPALIVE on upstream sockets.
        proxy_socket_keepalive: bool = false,
        /// `proxy_ignore_client_abort`.
        proxy_ignore_client_abort: bool = false,
        /// `proxy_ssl_session_reuse`: sessions with upstreams are resumed.
        proxy_ssl_session_reuse: bool = true,
        /// `proxy_ssl_protocols`, with where it was last written (nginx
        /// 1.22's default: `TLSv1 TLSv1.1 TLSv1.2`).
        proxy_ssl_protocols: (Protocols, Option<Loc>) = (Protocols::DEFAULT, None),
        /// `proxy_ssl_ciphers`: an OpenSSL cipher string.
        proxy_ssl_ciphers: (String, Option<Loc>) = (DEFAULT_PROXY_CIPHERS.to_string(), None),
        /// `proxy_ssl_name`: the name verified and sent (`None`: the
        /// group's host, nginx's `$proxy_host` without its port).
        proxy_ssl_name: Option<Template> = None,
        /// `proxy_ssl_server_name`: the name is sent (SNI).
        proxy_ssl_server_name: bool = false,
        /// `proxy_ssl_verify`: the upstream's certificate is verified.
        proxy_ssl_verify: bool = false,
        /// `proxy_ssl_verify_depth`: the most intermediate certificates.
        proxy_ssl_verify_depth: u64 = 1,
        /// `proxy_ssl_trusted_certificate`: the CAs that verify upstreams.
        proxy_ssl_trusted_certificate: Option<NamedFile> = None,
        /// `proxy_ssl_crl`: revoked upstream certificates.
        proxy_ssl_crl: Option<NamedFile> = None,
        /// `proxy_ssl_certificate`: the client certificate sent upstream.
        proxy_ssl_certificate: Option<CertName> = None,
        /// `proxy_ssl_certificate_key`: its key.
        proxy_ssl_certificate_key: Option<CertName> = None,
        /// `proxy_ssl_password_file`, read where it was written: the file
        /// and its passphrases.
        proxy_ssl_password_file: Option<(NamedFile, Passwords)> = None,
        /// `proxy_ssl_conf_command`: OpenSSL configuration commands; a
        /// level's list replaces its parent's.
        proxy_ssl_conf_command: Vec<(String, String, Loc)> = Vec::new(),
        /// `proxy_headers_hash_max_size` (sizes nginx's header hash only).
        proxy_headers_hash_max_size: u64 = 512,
        /// `proxy_headers_hash_bucket_size` (sizes nginx's header hash only).
        proxy_headers_hash_bucket_size: u64 = 64,
        /// `client_body_buffer_size`: two pages.
        client_body_buffer_size: u64 = 2 * PAGE_SIZE,
        /// `client_body_in_file_only`.
        client_body_in_file_only: BodyInFile = BodyInFile::Off,
        /// `client_body_in_single_buffer`.
        client_body_in_single_buffer: bool = false,
        /// `client_body_timeout`: the longest wait between two reads of a body.
        client_body_timeout: Duration = Duration::from_secs(60),
        /// `rewrite_log`: the rewrite module's `notice` lines.
        rewrite_log: bool = false,
        /// `uninitialized_variable_warn`: warn when a variable only `set`
        /// assigns is read before it is set.
        uninitialized_variable_warn: bool = true,
        /// `autoindex`: a URI ending in `/` with no index file is answered
        /// with a listing of the directory.
        autoindex: bool = false,
        /// `random_index`: a URI ending in `/` is served a random file of
        /// its directory.
        random_index: bool = false,
        /// `autoindex_format`.
        autoindex_format: AutoindexFormat = AutoindexFormat::Html,
        /// `autoindex_localtime`: listing times in the server's time zone.
        autoindex_localtime: bool = false,
        /// `autoindex_exact_size`: sizes in bytes rather than K, M, G.
        autoindex_exact_size: bool = true,
        /// `gzip`: compress responses on the fly.
        gzip: bool = false,
        /// `gzip_buffers number size`: the size is the piece of compressed
        /// output sent at a time.
        gzip_buffers: (u32, u64) = DEFAULT_GZIP_BUFFERS,
        /// `gzip_comp_level` 1..=9.
        gzip_comp_level: u32 = 1,
        /// `gzip_window` as zlib's window bits (9..=15).
        gzip_window: u8 = MAX_WINDOW_BITS,
        /// `gzip_hash` as zlib's memory level (1..=9).
        gzip_hash: u8 = DEFAULT_MEM_LEVEL,
        /// `gzip_min_length`: responses known to be shorter are not
        /// compressed.
        gzip_min_length: u64 = 20,
        /// `gzip_types`.
        gzip_types: TypeList = TypeList::of(&GZIP_DEFAULT_TYPES),
        /// `gzip_vary`: `Vary: Accept-Encoding` on responses gzip looked at.
        gzip_vary: bool = false,
        /// `gzip_proxied`.
        gzip_proxied: GzipProxied = GzipProxied::OFF,
        /// `gzip_disable` regular expressions (tried on `User-Agent`); a
        /// level's `gzip_disable` replaces its parent's list.
        gzip_disable: Vec<RegexSource> = Vec::new(),
        /// `gzip_disable msie6`, merged apart from the expressions as nginx
        /// merges it.
        gzip_disable_msie6: bool = false,
        /// `gzip_http_version`.
        gzip_http_version: GzipHttpVersion = GzipHttpVersion::V11,
        /// `postpone_gzipping`: input gathered before compressing starts.
        postpone_gzipping: u64 = 0,
        /// `gzip_no_buffer`: compressed output goes out after each input
        /// piece instead of in whole buffers.
        gzip_no_buffer: bool = false,
        /// `gzip_static`.
        gzip_static: GzipStatic = GzipStatic::Off,
        /// `gunzip`: decompress gzip responses for clients without gzip.
        gunzip: bool = false,
        /// `gunzip_buffers number size`.
        gunzip_buffers: (u32, u64) = DEFAULT_GZIP_BUFFERS,
        /// `charset`: the charset responses are sent in.
        charset: CharsetSpec = CharsetSpec::Off,
        /// `source_charset`: the charset the content is in.
        source_charset: CharsetSpec = CharsetSpec::Off,
        /// `override_charset`: recode responses whose type names a charset.
        override_charset: bool = false,
        /// `charset_types`.
        charset_types: TypeList = TypeList::of(&CHARSET_DEFAULT_TYPES),
        /// `max_ranges`: the most ranges a request may ask for before it is
        /// answered whole; 0 turns ranges off. `None`: no limit.
        max_ranges: Option<u64> = None,
        /// `output_buffers`: (count, size) of the buffers a body filter
        /// reads a file into (the size is what one read takes).
        output_buffers: (u32, u64) = (2, 32 * KB),
        /// `postpone_output`: a streamed body is written once this much
        /// is ready (or nothing more is ready now); 0 writes every piece.
        postpone_output: u64 = 1460,
        /// `subrequest_output_buffer_size`: the most a subrequest whose
        /// output is kept in memory may produce (one page).
        subrequest_output_buffer_size: u64 = PAGE_SIZE,
        /// `ssi`: the SSI filter processes responses of `ssi_types`.
        ssi: bool = false,
        /// `ssi_silent_errors`: a failed SSI command outputs nothing
        /// instead of the error message.
        ssi_silent_errors: bool = false,
        /// `ssi_ignore_recycled_buffers` (nginx's buffer bookkeeping;
        /// nowait has no recycled buffers, so it changes nothing).
        ssi_ignore_recycled_buffers: bool = false,
        /// `ssi_last_modified`: keep `Last-Modified` (and a weak `ETag`).
        ssi_last_modified: bool = false,
        /// `ssi_min_file_chunk`: kept for nginx's file buffers (nowait
        /// reads files for the filter in `output_buffers` pieces).
        ssi_min_file_chunk: u64 = KB,
        /// `ssi_value_length`: the longest value of an SSI parameter.
        ssi_value_length: u64 = 255,
        /// `ssi_types`: the MIME types the SSI filter processes.
        ssi_types: TypeList = TypeList::html(),
        /// `sub_filter string replacement`: the pairs in the order written
        /// (the string lowercased when it has no variables); a level's
        /// pairs replace its parent's.
        sub_filter: Vec<(Template, Template)> = Vec::new(),
        /// `sub_filter_once`: each string is replaced once.
        sub_filter_once: bool = true,
        /// `sub_filter_last_modified`: keep `Last-Modified` (weak `ETag`).
        sub_filter_last_modified: bool = false,
        /// `sub_filter_types`: the MIME types `sub_filter` processes.
        sub_filter_types: TypeList = TypeList::html(),
        /// `add_before_body uri`: a subrequest's output before the body
        /// (`None`: none, as an empty URI says).
        add_before_body: Option<String> = None,
        /// `add_after_body uri`: a subrequest's output after the body.
        add_after_body: Option<String> = None,
        /// `addition_types`: the MIME types the addition filter applies to.
        addition_types: TypeList = TypeList::html(),
        /// `allow`/`deny`, in order: a level that writes any replaces its
        /// parent's (nginx's `ngx_http_access_merge_loc_conf`).
        access_rules: Vec<AccessRule> = Vec::new(),
        /// `satisfy`.
        satisfy: Satisfy = Satisfy::All,
        /// `valid_referers`: what `$invalid_referer` calls valid (`None`:
        /// none written, every request is valid).
        valid_referers: Option<Arc<super::referer::ValidReferers>> = None,
        /// `auth_basic`: the realm (`off` when it evaluates to `off`);
        /// `None`: no basic authentication.
        auth_basic: Option<Template> = None,
        /// `auth_basic_user_file`, resolved against the configuration's
        /// folder when it evaluates to a relative path.
        auth_basic_user_file: Option<Template> = None,
        /// `secure_link`: the hash (base64url) and, after a comma, the
        /// expiry time `$secure_link` checks.
        secure_link: Option<Template> = None,
        /// `secure_link_md5`: the text whose MD5 the hash must be.
        secure_link_md5: Option<Template> = None,
        /// `secure_link_secret`: the old form's secret (empty: not set).
        secure_link_secret: String = String::new(),
        /// `auth_delay`: how long a 401 from the access phase waits.
        auth_delay: Duration = Duration::ZERO,
        /// `limit_req`: a level's entries replace its parent's.
        limit_req: Vec<LimitReq> = Vec::new(),
        /// `limit_req_status`.
        limit_req_status: u16 = 503,
        /// `limit_req_log_level` (delays are logged one level lower).
        limit_req_log_level: Level = Level::Error,
        /// `limit_req_dry_run`.
        limit_req_dry_run: bool = false,
        /// `limit_conn`: a level's entries replace its parent's.
        limit_conn: Vec<LimitConn> = Vec::new(),
        /// `limit_conn_status`.
        limit_conn_status: u16 = 503,
        /// `limit_conn_log_level`.
        limit_conn_log_level: Level = Level::Error,
        /// `limit_conn_dry_run`.
        limit_conn_dry_run: bool = false,
        /// `set_real_ip_from`: a level's entries replace its parent's; none
        /// turns the realip module off.
        real_ip_from: Vec<RealIpFrom> = Vec::new(),
        /// `real_ip_header`.
        real_ip_header: RealIpHeader = RealIpHeader::XRealIp,
        /// `real_ip_recursive`.
        real_ip_recursive: bool = false,
        /// `expires`: `Expires` and `Cache-Control` of successful replies.
        expires: Expires = Expires::default(),
        /// `add_trailer`: all of a level's entries replace the parent's.
        add_trailers: Vec<AddHeader> = Vec::new(),
        /// `chunked_transfer_encoding`: bodies of unknown length (and those
        /// with trailers) go chunked to HTTP/1.1 clients.
        chunked_transfer_encoding: bool = true,
        /// `etag`: the static handler sends an `ETag`.
        etag: bool = true,
        /// `if_modified_since off | exact | before`.
        if_modified_since: IfModifiedSince = IfModifiedSince::Exact,
        /// `error_log` of this level (empty: the main context's).
        error_log: ErrorLogs = ErrorLogs::default(),
        /// `log_not_found`: "No such file" errors are logged.
        log_not_found: bool = true,
        /// `log_subrequest`: subrequests are written to the access log.
        log_subrequest: bool = false,
        /// `absolute_redirect`: redirects made by nowait carry scheme and host.
        absolute_redirect: bool = true,
        /// `server_name_in_redirect`: the server's name, not `Host`, in them.
        server_name_in_redirect: bool = false,
        /// `port_in_redirect`: the port, unless the default one, in them.
        port_in_redirect: bool = true,
        /// `msie_padding`: error pages padded for MSIE.
        msie_padding: bool = true,
        /// `msie_refresh`: redirects answered to MSIE with a refresh page.
        msie_refresh: bool = false,
        /// `limit_rate`: bytes per second to the client (0: none).
        limit_rate: SizeValue = SizeValue::Fixed(0),
        /// `limit_rate_after`: bytes sent before `limit_rate` applies.
        limit_rate_after: SizeValue = SizeValue::Fixed(0),
        /// `keepalive_timeout`'s second parameter: `Keep-Alive: timeout=N`
        /// is sent when not 0 (merged apart from the first, as nginx does).
        keepalive_header: u64 = 0,
        /// `keepalive_time`: a connection older than this serves no more
        /// requests.
        keepalive_time: Duration = Duration::from_secs(3600),
        /// `keepalive_disable` (default `msie6`).
        keepalive_disable: KeepaliveDisable = KeepaliveDisable { msie6: true, safari: false },
        /// `lingering_close`.
        lingering_close: LingeringClose = LingeringClose::On,
        /// `lingering_time`: the longest a closing connection is read.
        lingering_time: Duration = Duration::from_secs(30),
        /// `lingering_timeout`: the longest wait for more bytes then.
        lingering_timeout: Duration = Duration::from_secs(5),
        /// `reset_timedout_connection`: a timed-out connection is reset.
        reset_timedout_connection: bool = false,
        /// `send_lowat` (accepted: Linux has no `SO_SNDLOWAT` to set).
        send_lowat: u64 = 0,
        /// `disable_symlinks`.
        disable_symlinks: DisableSymlinks = DisableSymlinks::default(),
        /// `open_file_cache` (`None`: off).
        open_file_cache: Option<OpenFileCache> = None,
        /// `open_file_cache_valid`: how long an entry is trusted unchecked.
        open_file_cache_valid: Duration = Duration::from_secs(60),
        /// `open_file_cache_min_uses`: uses within `inactive` before an
        /// entry keeps its descriptor.
        open_file_cache_min_uses: u32 = 1,
        /// `open_file_cache_errors`: failed lookups are cached too.
        open_file_cache_errors: bool = false,
        /// `open_file_cache_events` (accepted: nginx uses it only with kqueue).
        open_file_cache_events: bool = false,
        /// `types_hash_max_size` (sizes nginx's types hash only).
        types_hash_max_size: u64 = 1024,
        /// `types_hash_bucket_size` (sizes nginx's types hash only).
        types_hash_bucket_size: u64 = 64,
        /// `open_log_file_cache` (`None`: off).
        open_log_file_cache: Option<OpenLogFileCache> = None,
        /// `read_ahead` (accepted: the kernel's read-ahead is left alone).
        read_ahead: u64 = 0,
        /// `recursive_error_pages`.
        recursive_error_pages: bool = false,
        /// How much of the URI an `alias` replaces: the length of the name
        /// of the location that wrote it (inherited with it), `usize::MAX`
        /// in a regex location (the alias names the whole file), `None`
        /// under `root` (nginx's `clcf->alias`).
        alias_len: Option<usize> = None,
        /// `resolver`: looks up names `proxy_pass` makes from variables
        /// (`None`: such names answer 502, as nginx without a resolver).
        resolver: Option<Arc<crate::upstream::resolve::Resolver>> = None,
        /// `resolver_timeout`.
        resolver_timeout: Duration = Duration::from_secs(30),
    }
}

/// A `gzip_disable` expression and its source (nginx reports nothing per
/// match, but `-T` and tests read the source).
#[derive(Clone, Debug)]
pub struct RegexSource {
    /// The expression as written.
    pub source: String,
    /// Compiled, case-insensitive.
    pub re: crate::config::regex::Regex,
}

/// `proxy_cache_key`'s documented default as a template.
fn default_cache_key() -> Template {
    Template::parse(DEFAULT_PROXY_CACHE_KEY).expect("the default key is a valid template")
}

impl LocConf {
    /// The file layer this location's `aio`, `aio_fast_path` and `aio_write`
    /// ask for, with `pool` the pool its `aio threads` names.
    pub fn file_layer<'a>(
        &self,
        pool: Option<&'a Arc<crate::io::Pool>>,
    ) -> crate::io::file::FileLayer<'a> {
        crate::io::file::FileLayer {
            pool,
            fast: self.aio_fast_path,
            write: self.aio_write,
        }
    }

    /// The larger of `proxy_buffer_size` and one of `proxy_buffers`: the
    /// least nginx lets the busy buffers and temp-file sizes be.
    pub fn proxy_buffer_unit(&self) -> u64 {
        self.proxy_buffer_size.max(self.proxy_buffers.1)
    }

    /// `proxy_busy_buffers_size` in force (nginx: twice the unit by default).
    pub fn busy_buffers_size(&self) -> u64 {
        self.proxy_busy_buffers_size
            .unwrap_or(2 * self.proxy_buffer_unit())
    }

    /// `proxy_temp_file_write_size` in force (nginx: twice the unit by default).
    pub fn temp_file_write_size(&self) -> u64 {
        self.proxy_temp_file_write_size
            .unwrap_or(2 * self.proxy_buffer_unit())
    }

    /// `proxy_max_temp_file_size` in force (0: no temp files).
    pub fn max_temp_file_size(&self) -> u64 {
        self.proxy_max_temp_file_size
            .unwrap_or(DEFAULT_PROXY_MAX_TEMP_FILE_SIZE)
    }
}

inherited! {
    /// What one http or server block set of the server-wide settings.
    set SrvSet;
    /// Server-wide settings (nginx's server configuration) after merging.
    resolved SrvConf {
        /// `client_header_timeout`.
        client_header_timeout: Duration = Duration::from_secs(60),
        /// `client_header_buffer_size`.
        client_header_buffer_size: u64 = KB,
        /// `large_client_header_buffers`: (count, size).
        large_client_header_buffers: (u32, u64) = (4, 8 * KB),
        /// `merge_slashes`: `//` runs in a request's path count as one `/`.
        merge_slashes: bool = true,
        /// `connection_pool_size` (accepted: it sizes nginx's pools only).
        connection_pool_size: u64 = 512,
        /// `request_pool_size` (accepted: it sizes nginx's pools only).
        request_pool_size: u64 = PAGE_SIZE,
        /// `ignore_invalid_headers`: header lines with bad names are dropped.
        ignore_invalid_headers: bool = true,
        /// `underscores_in_headers`: `_` is valid in header names.
        underscores_in_headers: bool = false,
        /// `max_headers`: the most header lines a request may carry.
        max_headers: u64 = super::set_max_headers::DEFAULT_MAX_HEADERS,
        /// `ssl on` (nginx's deprecated `enable`): every `listen` of the
        /// server speaks TLS; where it was written, for nginx's messages.
        ssl: Option<Loc> = None,
        /// `ssl_certificate`: a level's list replaces its parent's.
        ssl_certificate: Vec<CertName> = Vec::new(),
        /// `ssl_certificate_key`, one per certificate, in order.
        ssl_certificate_key: Vec<CertName> = Vec::new(),
        /// `ssl_password_file`: passphrases tried on encrypted keys.
        ssl_password_file: Option<NamedFile> = None,
        /// `ssl_dhparam`: finite-field DHE parameters (rustls has no DHE).
        ssl_dhparam: Option<NamedFile> = None,
        /// `ssl_ecdh_curve`: the key-exchange groups, as OpenSSL names them.
        ssl_ecdh_curve: (String, Option<Loc>) = (DEFAULT_ECDH_CURVE.to_string(), None),
        /// `ssl_protocols`.
        ssl_protocols: (Protocols, Option<Loc>) = (Protocols::DEFAULT, None),
        /// `ssl_ciphers`: an OpenSSL cipher string.
        ssl_ciphers: (String, Option<Loc>) = (DEFAULT_CIPHERS.to_string(), None),
        /// `ssl_buffer_size`: the size of the TLS records sent.
        ssl_buffer_size: u64 = DEFAULT_BUFFER_SIZE,
        /// `ssl_verify_client`.
        ssl_verify_client: VerifyClient = VerifyClient::Off,
        /// `ssl_verify_depth`.
        ssl_verify_depth: u64 = 1,
        /// `ssl_client_certificate`: CAs that verify client certificates
        /// and are sent to clients.
        ssl_client_certificate: Option<NamedFile> = None,
        /// `ssl_trusted_certificate`: CAs that verify client certificates
        /// (and stapled responses) and are not sent.
        ssl_trusted_certificate: Option<NamedFile> = None,
        /// `ssl_crl`: revoked client certificates.
        ssl_crl: Option<NamedFile> = None,
        /// `ssl_prefer_server_ciphers`.
        ssl_prefer_server_ciphers: bool = false,
        /// `ssl_session_cache`, with where it was written.
        ssl_session_cache: (SessionCache, Option<Loc>) = (SessionCache::default(), None),
        /// `ssl_session_tickets`.
        ssl_session_tickets: bool = true,
        /// `ssl_session_ticket_key`: the first encrypts, all decrypt.
        ssl_session_ticket_key: Vec<NamedFile> = Vec::new(),
        /// `ssl_session_timeout`.
        ssl_session_timeout: Duration = Duration::from_secs(300),
        /// `ssl_early_data`: TLS 1.3 0-RTT data.
        ssl_early_data: bool = false,
        /// `ssl_reject_handshake`: handshakes naming this server are
        /// refused.
        ssl_reject_handshake: bool = false,
        /// `ssl_conf_command`: OpenSSL configuration commands.
        ssl_conf_command: Vec<(String, String, Loc)> = Vec::new(),
        /// `ssl_stapling`.
        ssl_stapling: bool = false,
        /// `ssl_stapling_file`: a DER OCSP response to staple.
        ssl_stapling_file: Option<NamedFile> = None,
        /// `ssl_stapling_responder`: the OCSP responder's URL.
        ssl_stapling_responder: Option<String> = None,
        /// `ssl_stapling_verify`.
        ssl_stapling_verify: bool = false,
        /// `ssl_ocsp`: client certificates asked about.
        ssl_ocsp: OcspCheck = OcspCheck::Off,
        /// `ssl_ocsp_responder`: the responder asked about them.
        ssl_ocsp_responder: Option<String> = None,
        /// `ssl_ocsp_cache`: where their statuses are kept (`off`: none).
        ssl_ocsp_cache: Option<OcspCacheZone> = None,
    }
}
