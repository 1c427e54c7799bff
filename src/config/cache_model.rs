//! The proxy cache's typed configuration: what `proxy_cache_path` declares
//! (a directory, its keys zone and the loader's and manager's pace), what
//! `proxy_store` writes, and the defaults nginx 1.22.1 gives them.
//! Re-exported by [`super::model`].
//!
//! Everything here is checked at load time; the cache engine reads these
//! types and never parses. The per-location settings (`proxy_cache`,
//! `proxy_cache_key`, `proxy_cache_valid`, …) are fields of
//! [`super::inherit::LocConf`].

use std::path::PathBuf;
use std::time::Duration;

use super::inherit::PAGE_SIZE;
use super::source::Loc;
use super::template::Template;

/// `inactive=` default: an entry unused this long is removed.
pub const DEFAULT_INACTIVE: Duration = Duration::from_secs(600);
/// `loader_files=` and `manager_files=` default.
pub const DEFAULT_CACHE_FILES: u32 = 100;
/// `loader_sleep=` and `manager_sleep=` default.
pub const DEFAULT_CACHE_SLEEP: Duration = Duration::from_millis(50);
/// `loader_threshold=` and `manager_threshold=` default.
pub const DEFAULT_CACHE_THRESHOLD: Duration = Duration::from_millis(200);
/// The smallest `keys_zone` size nginx accepts: two memory pages.
pub const MIN_KEYS_ZONE_SIZE: u64 = 2 * PAGE_SIZE;
/// The statuses `proxy_cache_valid TIME` (no codes) applies to.
pub const DEFAULT_VALID_STATUSES: [u16; 3] = [200, 301, 302];
/// The status code `proxy_cache_valid any …` is stored as.
pub const VALID_ANY: u16 = 0;
/// `proxy_cache_key`'s documented default. nginx's real default key is not
/// this template: see [`super::inherit::LocConf::proxy_cache_key_is_default`].
pub const DEFAULT_PROXY_CACHE_KEY: &str = "$scheme$proxy_host$request_uri";
/// `proxy_cache_lock_timeout` and `proxy_cache_lock_age` default.
pub const DEFAULT_CACHE_LOCK_TIME: Duration = Duration::from_secs(5);
/// `proxy_store_access` default: `user:rw`.
pub const DEFAULT_STORE_ACCESS: u32 = 0o600;
/// The methods `proxy_cache_methods` accepts, in nginx's order
/// (`ngx_http_upstream_cache_method_mask`).
pub const CACHE_METHODS: [&str; 3] = ["GET", "HEAD", "POST"];
/// The methods every cache serves, whatever `proxy_cache_methods` says.
pub const ALWAYS_CACHED_METHODS: [&str; 2] = ["GET", "HEAD"];

/// `proxy_cache_path`: one cache directory and its keys zone.
#[derive(Clone, Debug)]
pub struct CachePath {
    /// The cache directory, absolute, without a trailing `/`.
    pub path: PathBuf,
    /// `levels=1:2`: digits per subdirectory level (each 1 or 2, at most
    /// three levels); empty: files directly in the directory.
    pub levels: Vec<u8>,
    /// `keys_zone=NAME:SIZE` name: what `proxy_cache` names.
    pub zone: String,
    /// `keys_zone` size in bytes (at least [`MIN_KEYS_ZONE_SIZE`]).
    pub zone_size: u64,
    /// `max_size=`: the most the cached files may take; `None`: no limit.
    pub max_size: Option<u64>,
    /// `inactive=` (default 10m).
    pub inactive: Duration,
    /// `use_temp_path=` (default on): off writes temporary files in the
    /// cache directory instead of `proxy_temp_path`.
    pub use_temp_path: bool,
    /// `min_free=`: the free space the manager keeps on the file system;
    /// `None` when unset or 0 (nginx's "no minimum").
    pub min_free: Option<u64>,
    /// `manager_files=` (100): the most files the manager removes per turn.
    pub manager_files: u32,
    /// `manager_sleep=` (50ms): the manager's pause between turns.
    pub manager_sleep: Duration,
    /// `manager_threshold=` (200ms): the longest one manager turn runs.
    pub manager_threshold: Duration,
    /// `loader_files=` (100): the most files the loader reads per turn.
    pub loader_files: u32,
    /// `loader_sleep=` (50ms): the loader's pause between turns.
    pub loader_sleep: Duration,
    /// `loader_threshold=` (200ms): the longest one loader turn runs.
    pub loader_threshold: Duration,
    /// Where it was declared.
    pub loc: Loc,
}

/// `proxy_store`: whether responses are saved to files as they pass.
#[derive(Clone, Debug, Default)]
pub enum ProxyStore {
    /// `proxy_store off` (the default).
    #[default]
    Off,
    /// `proxy_store on`: under the location's `root`/`alias`, named by the
    /// URI, as the static handler maps it.
    On,
    /// `proxy_store STRING`: the file name, evaluated per request (a
    /// relative name is relative to the working directory, as nginx leaves it).
    Path(Template),
}
