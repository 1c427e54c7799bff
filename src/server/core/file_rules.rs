//! What a location says about looking files up: its `disable_symlinks`
//! rule for one path (nginx's `ngx_http_set_disable_symlinks`) and its
//! `open_file_cache*` settings, as one [`Lookup`] for the file layer.
//! Every file lookup of a request (the static handler, `index`,
//! `try_files`, `if (-f …)`, the access log's root test) asks here, so they
//! all follow the same rules.

use crate::config::core_model::SymlinkPolicy;
use crate::config::inherit::LocConf;
use crate::io::open_cache::Lookup;
use crate::sys::file::{LinkPolicy, Links};

use crate::server::core::request::Req;

/// The link rule for `path` under `conf`: `from=` leaves the part of the
/// path it names unchecked when the path starts with it, and turns the
/// check off when the path is exactly it.
pub fn links(r: &Req<'_>, conf: &LocConf, path: &[u8]) -> Links {
    let policy = match conf.disable_symlinks.policy {
        SymlinkPolicy::Off => return Links::FOLLOW,
        SymlinkPolicy::On => LinkPolicy::Refuse,
        SymlinkPolicy::IfNotOwner => LinkPolicy::RefuseIfNotOwner,
    };
    let Some(from) = &conf.disable_symlinks.from else {
        return Links { policy, from: 0 };
    };
    let from = r.expand(from);
    let len = from.len();
    if len == 0 || len > path.len() || path[..len] != from[..] {
        return Links { policy, from: 0 };
    }
    if len == path.len() {
        return Links::FOLLOW;
    }
    let from = if path[len] == b'/' {
        len
    } else if path[len - 1] == b'/' {
        len - 1
    } else {
        0
    };
    Links { policy, from }
}

/// The lookup settings of `conf` for `path`.
pub fn lookup<'c>(r: &Req<'_>, conf: &'c LocConf, path: &[u8]) -> Lookup<'c> {
    Lookup {
        cache: conf.open_file_cache.as_ref().map(|c| &*c.cache),
        valid: conf.open_file_cache_valid,
        min_uses: conf.open_file_cache_min_uses,
        errors: conf.open_file_cache_errors,
        links: links(r, conf, path),
    }
}
