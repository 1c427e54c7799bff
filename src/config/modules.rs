//! nginx's http modules, and which of them nowait implements: the truth
//! behind the `configure arguments:` line of `nowait -V`.
//!
//! nginx's test harness (and operators' scripts) read `nginx -V` to learn
//! what a binary can do: a module built by default counts as present unless
//! `--without-<module>` is printed; an optional one only when `--with-<module>`
//! is. nowait prints the same flags, derived from the directive table: a
//! module is implemented when every one of its directives is in
//! [`super::table::DIRECTIVES`] and ready. Adding a module's directives to the
//! table is therefore what makes `-V` claim it; nothing is claimed by hand.

use super::table::{self, Status};

/// Whether nginx builds a module unless told not to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Build {
    /// Built by default: `--without-NAME` when nowait lacks it.
    Default,
    /// Built on request: `--with-NAME` when nowait has it.
    Optional,
}

/// One nginx module and the directives that make it.
pub struct Module {
    /// The name as nginx's `configure` spells it (`http_rewrite_module`).
    pub name: &'static str,
    /// Built by default or on request.
    pub build: Build,
    /// Every directive of the module (nginx 1.22).
    pub directives: &'static [&'static str],
}

use Build::{Default, Optional};

macro_rules! module {
    ($name:literal, $build:expr, [$($d:literal),* $(,)?]) => {
        Module { name: $name, build: $build, directives: &[$($d),*] }
    };
}

/// nginx's http modules that the harness or operators ask about, with their
/// directives. The always-built core (http core, static, index, log,
/// headers, range, not-modified …) is not listed: nowait has no build
/// without it.
#[rustfmt::skip]
pub static HTTP_MODULES: &[Module] = &[
    module!("http_charset_module", Default, ["charset", "source_charset", "override_charset", "charset_types", "charset_map"]),
    // `gzip_vary`, `gzip_http_version`, `gzip_proxied` and `gzip_disable`
    // live in nginx's core module but are the gzip module's in its documentation.
    module!("http_gzip_module", Default, ["gzip", "gzip_buffers", "gzip_comp_level", "gzip_disable", "gzip_hash", "gzip_http_version", "gzip_min_length", "gzip_no_buffer", "gzip_proxied", "gzip_types", "gzip_vary", "gzip_window", "postpone_gzipping"]),
    module!("http_ssi_module", Default, ["ssi", "ssi_silent_errors", "ssi_ignore_recycled_buffers", "ssi_min_file_chunk", "ssi_value_length", "ssi_types", "ssi_last_modified"]),
    module!("http_userid_module", Default, ["userid", "userid_domain", "userid_expires", "userid_flags", "userid_mark", "userid_name", "userid_p3p", "userid_path", "userid_service"]),
    module!("http_access_module", Default, ["allow", "deny"]),
    module!("http_auth_basic_module", Default, ["auth_basic", "auth_basic_user_file"]),
    module!("http_mirror_module", Default, ["mirror", "mirror_request_body"]),
    module!("http_autoindex_module", Default, ["autoindex", "autoindex_exact_size", "autoindex_format", "autoindex_localtime"]),
    module!("http_geo_module", Default, ["geo"]),
    module!("http_map_module", Default, ["map", "map_hash_bucket_size", "map_hash_max_size"]),
    module!("http_split_clients_module", Default, ["split_clients"]),
    module!("http_referer_module", Default, ["valid_referers", "referer_hash_bucket_size", "referer_hash_max_size"]),
    module!("http_rewrite_module", Default, ["rewrite", "return", "break", "if", "set", "rewrite_log", "uninitialized_variable_warn"]),
    module!("http_proxy_module", Default, ["proxy_pass", "proxy_temp_path", "proxy_set_header", "proxy_buffering", "proxy_http_version"]),
    module!("http_fastcgi_module", Default, ["fastcgi_pass", "fastcgi_temp_path", "fastcgi_param"]),
    module!("http_uwsgi_module", Default, ["uwsgi_pass", "uwsgi_temp_path", "uwsgi_param"]),
    module!("http_scgi_module", Default, ["scgi_pass", "scgi_temp_path", "scgi_param"]),
    module!("http_grpc_module", Default, ["grpc_pass"]),
    module!("http_memcached_module", Default, ["memcached_pass"]),
    module!("http_limit_conn_module", Default, ["limit_conn_zone", "limit_conn", "limit_conn_dry_run", "limit_conn_log_level", "limit_conn_status"]),
    module!("http_limit_req_module", Default, ["limit_req_zone", "limit_req", "limit_req_dry_run", "limit_req_log_level", "limit_req_status"]),
    module!("http_empty_gif_module", Default, ["empty_gif"]),
    module!("http_browser_module", Default, ["modern_browser", "ancient_browser", "modern_browser_value", "ancient_browser_value"]),
    module!("http_upstream_hash_module", Default, ["hash"]),
    module!("http_upstream_ip_hash_module", Default, ["ip_hash"]),
    module!("http_upstream_least_conn_module", Default, ["least_conn"]),
    module!("http_upstream_random_module", Default, ["random"]),
    module!("http_upstream_keepalive_module", Default, ["keepalive", "keepalive_requests", "keepalive_time", "keepalive_timeout"]),
    module!("http_upstream_zone_module", Default, ["zone"]),
    // The cache is `--without-http-cache` in nginx's configure.
    module!("http-cache", Default, ["proxy_cache", "proxy_cache_path", "proxy_cache_key", "proxy_cache_valid", "proxy_cache_methods", "proxy_cache_convert_head", "proxy_cache_min_uses", "proxy_cache_bypass", "proxy_no_cache", "proxy_cache_use_stale", "proxy_cache_background_update", "proxy_cache_revalidate", "proxy_cache_lock", "proxy_cache_lock_timeout", "proxy_cache_lock_age", "proxy_cache_max_range_offset"]),
    module!("http_ssl_module", Optional, ["ssl", "ssl_certificate", "ssl_certificate_key", "ssl_password_file", "ssl_dhparam", "ssl_ecdh_curve", "ssl_protocols", "ssl_ciphers", "ssl_prefer_server_ciphers", "ssl_buffer_size", "ssl_session_cache", "ssl_session_timeout", "ssl_session_tickets", "ssl_session_ticket_key", "ssl_verify_client", "ssl_verify_depth", "ssl_client_certificate", "ssl_trusted_certificate", "ssl_crl", "ssl_stapling", "ssl_stapling_file", "ssl_stapling_responder", "ssl_stapling_verify", "ssl_ocsp", "ssl_ocsp_responder", "ssl_ocsp_cache", "ssl_early_data", "ssl_reject_handshake", "ssl_conf_command"]),
    module!("http_v2_module", Optional, ["http2_max_concurrent_streams"]),
    module!("http_realip_module", Optional, ["set_real_ip_from", "real_ip_header", "real_ip_recursive"]),
    module!("http_addition_module", Optional, ["add_before_body", "add_after_body", "addition_types"]),
    module!("http_sub_module", Optional, ["sub_filter", "sub_filter_last_modified", "sub_filter_once", "sub_filter_types"]),
    module!("http_dav_module", Optional, ["dav_methods", "create_full_put_path", "dav_access", "min_delete_depth"]),
    module!("http_flv_module", Optional, ["flv"]),
    module!("http_mp4_module", Optional, ["mp4", "mp4_buffer_size", "mp4_max_buffer_size"]),
    module!("http_gunzip_module", Optional, ["gunzip", "gunzip_buffers"]),
    module!("http_gzip_static_module", Optional, ["gzip_static"]),
    module!("http_auth_request_module", Optional, ["auth_request", "auth_request_set"]),
    module!("http_random_index_module", Optional, ["random_index"]),
    module!("http_secure_link_module", Optional, ["secure_link", "secure_link_md5", "secure_link_secret"]),
    module!("http_slice_module", Optional, ["slice"]),
    module!("http_stub_status_module", Optional, ["stub_status"]),
];

/// Whether the directive table implements every directive of `m`, in any
/// context.
pub fn implemented(m: &Module) -> bool {
    m.directives
        .iter()
        .all(|d| table::lookup(d).any(|s| s.status != Status::NotYet))
}

/// Whether the ssl module is implemented (then `-V` says "TLS SNI support
/// enabled", as nginx does with a library that has SNI).
pub fn ssl_implemented() -> bool {
    HTTP_MODULES
        .iter()
        .find(|m| m.name == "http_ssl_module")
        .is_some_and(implemented)
}

/// The module flags of `configure arguments:`: `--with-threads`, then
/// `--with-X` for each optional module nowait implements and `--without-X`
/// for each default one it does not.
pub fn configure_flags() -> Vec<String> {
    let mut out = vec!["--with-threads".to_string()];
    for m in HTTP_MODULES {
        match (m.build, implemented(m)) {
            (Optional, true) => out.push(format!("--with-{}", m.name)),
            (Default, false) => out.push(format!("--without-{}", m.name)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modules_nowait_lacks_are_declared_absent() {
        let flags = configure_flags();
        // No `fastcgi_pass` in the table: the harness must not write
        // `fastcgi_temp_path` for nowait.
        assert!(flags.contains(&"--without-http_fastcgi_module".to_string()));
        // Every directive of the ssl module works: it is claimed.
        assert!(flags.contains(&"--with-http_ssl_module".to_string()));
    }

    #[test]
    fn a_module_is_implemented_only_when_all_its_directives_are() {
        let m = Module {
            name: "test",
            build: Default,
            directives: &["root", "no_such_directive"],
        };
        assert!(!implemented(&m));
        let m = Module {
            name: "test",
            build: Default,
            directives: &["root", "alias"],
        };
        assert!(implemented(&m));
    }

    /// The harness matches some features by bare words (`stream`, `ssl`,
    /// `http_v2`): no flag may contain one by accident. (`upstream`
    /// contains `stream`: a harness quirk that any nginx built without an
    /// upstream module shares; it ends when the upstream modules land.
    /// `http_ssl` is claimed by its own flag.)
    #[test]
    fn flags_name_no_module_by_accident() {
        let all = configure_flags()
            .join(" ")
            .replace("upstream", "")
            .replace("--with-http_ssl_module", "");
        for word in ["stream", "mail", "http_v2", "http_ssl", "sni"] {
            assert!(!all.contains(word), "{word} in {all}");
        }
    }
}
