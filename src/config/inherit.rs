//! Settings inherited parent → child (http → server → location), each with its
//! default written once.
//!
//! A level records what its own block set (`…Set`, every field optional);
//! after the whole file is read, each level is resolved against its parent's
//! resolved values, and the http level against the defaults below. This is
//! nginx's create/merge of location configurations, as data.

use std::sync::Arc;
use std::time::Duration;

pub use super::model::BodyInFile;
use super::model::{AccessLogs, AddHeader, Aio, ErrorPage, Root, TempPath, Types};
use super::template::Template;

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
const MB: u64 = 1024 * 1024;

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
        default_type: String = "text/plain".to_string(),
        /// `access_log`.
        access_log: AccessLogs = AccessLogs::default_log(),
        /// `sendfile`.
        sendfile: bool = false,
        /// `sendfile_max_chunk` (nginx 1.21.4+ default 2m; 0 means unbounded).
        sendfile_max_chunk: u64 = 2 * MB,
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
        /// `server_tokens`: version in `Server` header and error pages.
        server_tokens: bool = true,
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
        /// `client_body_buffer_size`: request bodies up to this size stay in
        /// memory (two pages on x86-64, nginx's default).
        client_body_buffer_size: u64 = 16 * KB,
        /// `client_body_in_file_only`.
        client_body_in_file_only: BodyInFile = BodyInFile::Off,
        /// `client_body_in_single_buffer`.
        client_body_in_single_buffer: bool = false,
        /// `client_body_timeout`: the longest wait between two reads of a
        /// request body.
        client_body_timeout: Duration = Duration::from_secs(60),
        /// `client_max_body_size` (0 disables the check).
        client_max_body_size: u64 = MB,
        /// `error_page`: all of a level's entries replace the parent's.
        error_pages: Vec<ErrorPage> = Vec::new(),
        /// `add_header`: all of a level's entries replace the parent's.
        add_headers: Vec<AddHeader> = Vec::new(),
        /// `proxy_cache` (parsed; served by the caching-proxy issue).
        proxy_cache: Option<Template> = None,
        /// `proxy_cache_key` (nginx's default `$scheme$proxy_host$request_uri`).
        proxy_cache_key: Option<Template> = None,
        /// `proxy_cache_valid`: (status codes, time); empty codes = 200 301 302.
        proxy_cache_valid: Vec<(Vec<u16>, Duration)> = Vec::new(),
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
    }
}
