//! nginx's checks of the proxy module's header hashes, made where nginx
//! builds them while merging levels (`ngx_http_proxy_merge_loc_conf`):
//! the hash of the response fields hidden
//! (`ngx_http_upstream_hide_headers_hash`), of the request fields set
//! (`ngx_http_proxy_init_headers`), and, at a level that caches, of the
//! fields a cache fill sets. All are `proxy_headers_hash`, sized by
//! `proxy_headers_hash_max_size` and `proxy_headers_hash_bucket_size`; a
//! size nothing fits is nginx's `[emerg]`, a table that fits only past the
//! maximum its `[warn]` (see [`super::map::check_hash`]).
//!
//! nowait looks fields up without these tables; only the messages are
//! nginx's, at the levels nginx prints them: a level builds a table only
//! when it differs from its parent's or the parent has none yet (the http
//! level is never merged: its first server that inherits a list unchanged
//! builds it for the servers after it).

use super::inherit::{LocConf, LocSet};
use super::map::{CACHE_LINE, check_hash_slots};

/// The hash's name in nginx's messages.
const HASH_NAME: &str = "proxy_headers_hash";

/// nginx's `ngx_http_proxy_hide_headers`.
pub const DEFAULT_HIDDEN: [&str; 8] = [
    "Date",
    "Server",
    "X-Pad",
    "X-Accel-Expires",
    "X-Accel-Redirect",
    "X-Accel-Limit-Rate",
    "X-Accel-Buffering",
    "X-Accel-Charset",
];

/// The names of nginx's `ngx_http_proxy_headers`: the request fields the
/// proxy sets unless `proxy_set_header` names them.
pub const DEFAULT_SET: [&str; 8] = [
    "Host",
    "Connection",
    "Content-Length",
    "Transfer-Encoding",
    "TE",
    "Keep-Alive",
    "Expect",
    "Upgrade",
];

/// The names of nginx's `ngx_http_proxy_cache_headers`: [`DEFAULT_SET`]
/// and the conditions and ranges a cache fill does not pass on.
pub const DEFAULT_SET_CACHED: [&str; 14] = [
    "Host",
    "Connection",
    "Content-Length",
    "Transfer-Encoding",
    "TE",
    "Keep-Alive",
    "Expect",
    "Upgrade",
    "If-Modified-Since",
    "If-Unmodified-Since",
    "If-None-Match",
    "If-Match",
    "Range",
    "If-Range",
];

/// Which of a level's tables exist, built there or taken from its parent.
#[derive(Clone, Copy, Debug, Default)]
pub struct Tables {
    /// The hidden fields' table.
    hide: bool,
    /// The set fields' table.
    set: bool,
    /// The set fields' table of a caching level.
    set_cached: bool,
    /// The level is the http level and wrote no `proxy_set_header`: its
    /// entries are nginx's "unset" (`NGX_CONF_UNSET_PTR`, never merged),
    /// which a server's merged "none" never equals, so every server that
    /// writes none builds its own set table.
    entries_unset: bool,
}

impl Tables {
    /// The http level's: none built yet; `wrote_entries` says whether it
    /// wrote `proxy_set_header`.
    pub fn http(wrote_entries: bool) -> Tables {
        Tables {
            entries_unset: !wrote_entries,
            ..Tables::default()
        }
    }
}

/// A table's check: nginx's message, `Err` for an `[emerg]`.
pub type Problem = Result<String, String>;

/// Checks the tables the level with `set` (what it wrote) and `conf` (its
/// merged settings) builds under a parent whose tables are `parent` (the
/// http level's are updated as nginx's "special handling" does); returns
/// the level's own tables, for its children, and the problems found, in
/// nginx's order.
pub fn level(set: &LocSet, conf: &LocConf, parent: &mut Tables) -> (Tables, Vec<Problem>) {
    let max_size = conf.proxy_headers_hash_max_size;
    let bucket_size = conf
        .proxy_headers_hash_bucket_size
        .div_ceil(CACHE_LINE)
        .saturating_mul(CACHE_LINE);
    let mut problems = Vec::new();
    let mut check = |keys: &[Option<&str>]| {
        let keys: Vec<Option<&[u8]>> = keys.iter().map(|k| k.map(str::as_bytes)).collect();
        match check_hash_slots(&keys, max_size, bucket_size, HASH_NAME) {
            Ok(None) => {}
            Ok(Some(warning)) => problems.push(Ok(warning)),
            Err(emerg) => problems.push(Err(emerg)),
        }
    };
    let mut own = Tables::default();
    let lists_inherited = set.proxy_hide_header.is_none() && set.proxy_pass_header.is_none();
    if lists_inherited && parent.hide {
        own.hide = true;
    } else {
        check(&hidden_keys(conf));
        own.hide = true;
        if lists_inherited {
            parent.hide = true;
        }
    }
    // nginx's `conf->headers_source == prev->headers_source`.
    let entries_inherited = set.proxy_set_header.is_none() && !parent.entries_unset;
    if entries_inherited {
        own.set = parent.set;
        own.set_cached = parent.set_cached;
    }
    if !own.set {
        check(&set_keys(conf, &DEFAULT_SET));
        own.set = true;
    }
    if conf.proxy_cache.is_some() && !own.set_cached {
        check(&set_keys(conf, &DEFAULT_SET_CACHED));
        own.set_cached = true;
    }
    if entries_inherited && !parent.set {
        parent.set = own.set;
        parent.set_cached = own.set_cached;
    }
    (own, problems)
}

/// The hidden table's keys as nginx lays them out: its defaults, then
/// each `proxy_hide_header` name not there yet; each `proxy_pass_header`
/// name then leaves an empty slot where it was (`None`), which still
/// counts towards the table's starting size.
fn hidden_keys(conf: &LocConf) -> Vec<Option<&str>> {
    let mut keys: Vec<Option<&str>> = DEFAULT_HIDDEN.iter().copied().map(Some).collect();
    for name in &conf.proxy_hide_header {
        if !keys.iter().flatten().any(|k| k.eq_ignore_ascii_case(name)) {
            keys.push(Some(name));
        }
    }
    for name in &conf.proxy_pass_header {
        if let Some(slot) = keys
            .iter_mut()
            .find(|k| k.is_some_and(|k| k.eq_ignore_ascii_case(name)))
        {
            *slot = None;
        }
    }
    keys
}

/// The set table's keys: every `proxy_set_header` name as written, then
/// each of `defaults` no entry names.
fn set_keys<'a>(conf: &'a LocConf, defaults: &[&'a str]) -> Vec<Option<&'a str>> {
    let mut keys: Vec<Option<&str>> = conf
        .proxy_set_header
        .iter()
        .map(|(n, _)| Some(n.as_str()))
        .collect();
    for d in defaults {
        if !conf
            .proxy_set_header
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case(d))
        {
            keys.push(Some(d));
        }
    }
    keys
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::template::Template;

    fn conf(f: impl FnOnce(&mut LocConf)) -> LocConf {
        let mut c = LocConf::default();
        f(&mut c);
        c
    }

    #[test]
    fn the_pass_list_empties_slots_of_the_hide_list() {
        let c = conf(|c| {
            c.proxy_hide_header = vec!["x-pad".into(), "X-Foo".into(), "x-foo".into()];
            c.proxy_pass_header = vec!["Server".into(), "X-FOO".into(), "X-Bar".into()];
        });
        let keys = hidden_keys(&c);
        assert_eq!(keys.len(), 9, "{keys:?}");
        assert_eq!(keys[1], None);
        assert_eq!(keys[8], None);
        assert_eq!(keys.iter().flatten().count(), 7);
    }

    #[test]
    fn defaults_follow_the_entries_they_are_not_named_by() {
        let c = conf(|c| {
            c.proxy_set_header = vec![
                ("host".into(), Template::literal("h")),
                ("X-A".into(), Template::literal("a")),
            ]
        });
        let keys: Vec<&str> = set_keys(&c, &DEFAULT_SET).into_iter().flatten().collect();
        assert_eq!(keys[..3], ["host", "X-A", "Connection"]);
        assert_eq!(keys.len(), 9);
    }

    #[test]
    fn tables_are_built_where_nginx_builds_them() {
        let small = conf(|c| c.proxy_headers_hash_max_size = 0);
        let nothing = LocSet::default();
        // The first server builds both tables, for the http level too
        // when it wrote entries.
        let mut http = Tables::http(true);
        let (server, problems) = level(&nothing, &small, &mut http);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(http.hide && http.set && !http.set_cached);
        // The next server, and a location setting nothing, build none.
        assert!(level(&nothing, &small, &mut http).1.is_empty());
        // Without entries at the http level, each server builds its set
        // table.
        let mut bare = Tables::http(false);
        assert_eq!(level(&nothing, &small, &mut bare).1.len(), 2);
        assert_eq!(level(&nothing, &small, &mut bare).1.len(), 1);
        let mut parent = server;
        assert!(level(&nothing, &small, &mut parent).1.is_empty());
        // A level with lists or entries of its own builds that table.
        let hides = LocSet {
            proxy_hide_header: Some(vec!["X-A".into()]),
            ..LocSet::default()
        };
        let (_, problems) = level(&hides, &small, &mut parent);
        assert_eq!(
            problems,
            [Err(
                "could not build proxy_headers_hash, you should increase \
                  proxy_headers_hash_max_size: 0"
                    .to_string()
            )]
        );
        // A caching level builds its cache table once.
        let cached = conf(|c| {
            c.proxy_headers_hash_max_size = 0;
            c.proxy_cache = Some(Template::literal("z"));
        });
        let (child, problems) = level(&nothing, &cached, &mut parent);
        assert_eq!(problems.len(), 1);
        let mut child = child;
        assert!(level(&nothing, &cached, &mut child).1.is_empty());
    }

    #[test]
    fn a_long_name_needs_a_larger_bucket() {
        let long = "X-".to_string() + &"a".repeat(45);
        let c = conf(|c| c.proxy_hide_header = vec![long.clone()]);
        let set = LocSet {
            proxy_hide_header: Some(vec![long]),
            ..LocSet::default()
        };
        let (_, problems) = level(&set, &c, &mut Tables::http(false));
        assert_eq!(
            problems,
            [Err(
                "could not build proxy_headers_hash, you should increase \
                  proxy_headers_hash_bucket_size: 64"
                    .to_string()
            )]
        );
        // Passed, the name leaves the table.
        let c = LocConf {
            proxy_pass_header: c.proxy_hide_header.clone(),
            ..c
        };
        assert!(level(&set, &c, &mut Tables::http(false)).1.is_empty());
    }
}
