//! `proxy_pass`: the content handler of a proxied location, and the HTTP
//! plug-in of the upstream engine ([`super::upstream`]), as nginx's proxy
//! module plugs into `ngx_http_upstream.c`.
//!
//! One request: the target its `proxy_pass` names ([`target`]), the
//! engine's settings from the `proxy_*` directives ([`conf`]), then the
//! engine runs it with the HTTP protocol ([`http::Http`]).
//!
//! - [`http`]: the plug-in ([`super::upstream::Protocol`] for HTTP/1.x).
//! - [`request`]: the request line and headers sent upstream.
//! - [`response`]: the upstream's head → the client's reply.
//! - [`target`]: where a `proxy_pass` sends a request.

pub mod http;
pub mod request;
pub mod response;
pub mod target;

use crate::config::inherit::LocConf;
use crate::http::status::Status;
use crate::io::file::FileLayer;

use super::upstream::{self as engine, Proxied, Start, UpstreamConf};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;

/// Runs the proxy for `r`.
pub async fn handle<'a>(
    site: &'a Site,
    r: &mut Req<'a>,
    client: &mut Client<'_>,
    files: FileLayer<'_>,
) -> Proxied {
    let Some(pass) = r.location.and_then(|l| l.proxy_pass.as_ref()) else {
        return engine::reply(Reply::special(Status::INTERNAL_SERVER_ERROR));
    };
    let target = match target::target(site, r, pass).await {
        Ok(t) => t,
        Err(status) => return engine::reply(Reply::special(status)),
    };
    let start = Start {
        target,
        conf: conf(r.conf),
        protocol: http::Http::default(),
    };
    engine::run(site, r, client, files, start).await
}

/// The engine's settings the `proxy_*` directives of `conf` make (nginx's
/// `ngx_http_proxy_loc_conf_t.upstream`).
pub fn conf(conf: &LocConf) -> UpstreamConf<'_> {
    UpstreamConf {
        connect_timeout: conf.proxy_connect_timeout,
        send_timeout: conf.proxy_send_timeout,
        read_timeout: conf.proxy_read_timeout,
        socket_keepalive: conf.proxy_socket_keepalive,
        buffer_size: conf.proxy_buffer_size,
        buffers: conf.proxy_buffers,
        busy_buffers_size: conf.busy_buffers_size(),
        max_temp_file_size: conf.max_temp_file_size(),
        temp_file_write_size: conf.temp_file_write_size(),
        temp_path: &conf.proxy_temp_path,
        buffering: conf.proxy_buffering,
        request_buffering: conf.proxy_request_buffering,
        pass_request_body: conf.proxy_pass_request_body,
        set_body: conf.proxy_set_body.as_ref(),
        ignore_client_abort: conf.proxy_ignore_client_abort,
        intercept_errors: conf.proxy_intercept_errors,
        next_upstream: conf.proxy_next_upstream,
        next_upstream_tries: conf.proxy_next_upstream_tries,
        next_upstream_timeout: conf.proxy_next_upstream_timeout,
        limit_rate: conf.proxy_limit_rate,
        force_ranges: conf.proxy_force_ranges,
        store: &conf.proxy_store,
        store_access: conf.proxy_store_access,
    }
}
