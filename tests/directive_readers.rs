//! Every directive the table marks as working is read at run time.
//!
//! nowait's promise is that a directive is implemented or refused, never
//! silently ignored. A directive can creep into that state when its setter
//! stores a value nothing reads. This test reads the sources: for each
//! [`Status::Ready`] directive, the field it sets (`.name`, or the reader
//! named in [`READERS`]) must be read somewhere outside `src/config/` and
//! outside test code. A [`Status::NoEffect`] directive must *not* be read
//! there: once something reads it, it has an effect, and its row must say
//! `Ready`.

use std::collections::BTreeMap;
use std::path::Path;

use nowait::config::table::{DIRECTIVES, Status};
use regex::Regex;

/// Directives whose value is read under another name than `.directive`,
/// with the pattern that finds the reader (a regular expression over the
/// run-time sources).
const READERS: &[(&str, &str)] = &[
    ("thread_pool", r"\.thread_pools\b"),
    ("loop_turn_budget", r"\.turn_budget\b"),
    ("nowait_status", r"Handler::Status\b"),
    ("stub_status", r"Handler::StubStatus\b"),
    ("empty_gif", r"Handler::EmptyGif\b"),
    ("alias", r"\.alias_len\b"),
    ("add_header", r"\.add_headers\b"),
    ("add_trailer", r"\.add_trailers\b"),
    ("server_name", r"\.names\b"),
    ("return", r"RewriteOp::Return\b"),
    ("break", r"RewriteOp::Break\b"),
    ("if", r"RewriteOp::If\b"),
    ("ip_hash", r"Balance::IpHash\b"),
    ("least_conn", r"Balance::LeastConn\b"),
    ("random", r"Balance::Random\b"),
    ("hash", r"Balance::Hash\b"),
    ("proxy_max_temp_file_size", r"\.max_temp_file_size\(\)"),
    ("proxy_temp_file_write_size", r"\.temp_file_write_size\(\)"),
    ("proxy_busy_buffers_size", r"\.busy_buffers_size\(\)"),
    ("proxy_cache_path", r"\.cache_paths\b"),
    ("charset_map", r"\.charsets\b"),
    ("allow", r"\.deny\b"),
    ("limit_except", r"\.limit_except\b|\.except\b"),
    ("limit_req_zone", r"\.limit_req_zones\b"),
    ("limit_conn_zone", r"\.limit_conn_zones\b"),
    ("set_real_ip_from", r"\.real_ip_from\b"),
    ("limit_rate_after", r"\.limit_rate_after\b"),
    ("error_page", r"\.error_pages\b"),
    // `.zone` alone is the cache's zone: the upstream group's would be read
    // from the group.
    ("zone", r"\b(u|group|upstream)\.zone\b"),
    // nginx's ACME module: the issuers and orders reach the issuers'
    // threads through the http block's `AcmeConf`.
    ("acme_issuer", r"\.issuers\b"),
    ("contact", r"\.contacts\b"),
    ("external_account_key", r"\.eab\b"),
    ("accept_terms_of_service", r"\.accept_tos\b"),
    ("acme_certificate", r"\.certificates\b"),
    // The ssl module's settings reach the server through its `TlsPlan`.
    ("ssl_certificate", r"plan\.pairs\b"),
    ("ssl_certificate_key", r"plan\.pairs\b"),
    ("ssl_ecdh_curve", r"plan\.groups\b"),
    ("ssl_protocols", r"plan\.protocols\b"),
    ("ssl_ciphers", r"plan\.tls12_suites\b"),
    ("ssl_conf_command", r"plan\.tls13_suites\b"),
    (
        "ssl_prefer_server_ciphers",
        r"plan\.prefer_server_ciphers\b",
    ),
    ("ssl_buffer_size", r"plan\.buffer_size\b"),
    ("ssl_session_cache", r"plan\.session_cache\b"),
    ("ssl_session_timeout", r"plan\.session_timeout\b"),
    ("ssl_session_tickets", r"TicketPlan::Off\b"),
    ("ssl_session_ticket_key", r"TicketPlan::Files\b"),
    ("ssl_ocsp", r"\.plan\.leaf_only\b"),
    ("ssl_ocsp_responder", r"\.plan\.responder\b"),
    ("ssl_ocsp_cache", r"\.ocsp_cache\("),
    ("ssl_stapling", r"\bplan\.stapling\b"),
    ("ssl_stapling_file", r"StapleSource::File\b"),
    ("ssl_stapling_responder", r"StapleSource::Responder\b"),
    ("ssl_stapling_verify", r"\.plan\.verify\b"),
    ("ssl_trusted_certificate", r"\.plan\.trusted\b"),
    // The proxy's TLS settings reach the connections through the
    // location's `UpstreamTlsPlan`.
    ("proxy_ssl_session_reuse", r"plan\.session_reuse\b"),
    ("proxy_ssl_protocols", r"plan\.protocols\b"),
    ("proxy_ssl_ciphers", r"plan\.tls12_suites\b"),
    ("proxy_ssl_conf_command", r"plan\.tls13_suites\b"),
    ("proxy_ssl_name", r"plan\.name\b"),
    ("proxy_ssl_server_name", r"plan\.server_name\b"),
    ("proxy_ssl_verify", r"plan\.verifier\b"),
    ("proxy_ssl_verify_depth", r"plan\.verifier\b"),
    ("proxy_ssl_trusted_certificate", r"plan\.verifier\b"),
    ("proxy_ssl_crl", r"plan\.verifier\b"),
    ("proxy_ssl_certificate", r"plan\.certificate\b"),
    ("proxy_ssl_certificate_key", r"plan\.certificate\b"),
    ("proxy_ssl_password_file", r"plan\.certificate\b"),
    ("ssl_password_file", r"plan\.passwords\b"),
    ("ssl_verify_depth", r"plan\.client_cas\b"),
    ("ssl_client_certificate", r"plan\.client_cas\b"),
    ("ssl_crl", r"plan\.client_cas\b"),
    ("ssl_early_data", r"plan\.early_data\b"),
];

/// Directives that are structure, not a value: they open a block or
/// include a file, and what they hold is read through the directives
/// inside. `use` accepts only `epoll`, the one method nowait has.
const STRUCTURE: &[&str] = &[
    "include",
    "events",
    "http",
    "server",
    "location",
    "types",
    "upstream",
    "map",
    "split_clients",
    "limit_except",
    "use",
];

/// The run-time sources: `src/` without `config/`, test files and
/// `#[cfg(test)]` modules, with `//` comments removed.
fn runtime_sources() -> String {
    let mut out = String::new();
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("read src/") {
            let path = entry.expect("entry of src/").path();
            if path.is_dir() {
                if path != root.join("config") {
                    stack.push(path);
                }
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            if !name.ends_with(".rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).expect("read a source file");
            let text = match text.find("#[cfg(test)]") {
                Some(i) => &text[..i],
                None => &text[..],
            };
            for line in text.lines() {
                let code = line.split("//").next().unwrap_or("");
                out.push_str(code);
                out.push('\n');
            }
        }
    }
    out
}

/// The pattern that finds a read of `name`'s value.
fn reader(name: &str) -> Regex {
    let custom: BTreeMap<&str, &str> = READERS.iter().copied().collect();
    let pattern = match custom.get(name) {
        Some(p) => p.to_string(),
        None => format!(r"\.{}\b", regex::escape(name)),
    };
    Regex::new(&pattern).expect("a reader pattern")
}

#[test]
fn every_working_directive_is_read_at_run_time() {
    let src = runtime_sources();
    let mut unread = Vec::new();
    for spec in DIRECTIVES {
        if spec.status != Status::Ready || STRUCTURE.contains(&spec.name) {
            continue;
        }
        if !reader(spec.name).is_match(&src) {
            unread.push(spec.name);
        }
    }
    unread.dedup();
    assert!(
        unread.is_empty(),
        "directives marked as working that nothing outside src/config/ reads \
         (implement them, mark them NoEffect with the reason, or name their reader in READERS): {unread:?}"
    );
}

#[test]
fn a_directive_without_effect_is_not_read_at_run_time() {
    let src = runtime_sources();
    let mut read = Vec::new();
    for spec in DIRECTIVES {
        if matches!(spec.status, Status::NoEffect(_)) && reader(spec.name).is_match(&src) {
            read.push(spec.name);
        }
    }
    assert!(
        read.is_empty(),
        "directives marked as having no effect that run-time code reads (mark them Ready): {read:?}"
    );
}

#[test]
fn every_reader_names_a_directive_of_the_table() {
    for (name, _) in READERS {
        assert!(
            DIRECTIVES.iter().any(|s| s.name == *name),
            "READERS names \"{name}\", which the table does not have"
        );
    }
}
