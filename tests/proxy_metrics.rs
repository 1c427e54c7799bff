//! The status page counts each upstream server's exchanges, failures,
//! connections (in use and idle) and response times.

mod common;

use common::client::get;
use common::{Conf, Server, Upstream};

#[test]
fn status_page_shows_each_upstream_server() {
    let up = Upstream::fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    let dead = common::server::free_port();
    let conf = Conf::http(&format!(
        "upstream u {{ server 127.0.0.1:{up}; keepalive 2; }}\n\
         upstream d {{ server 127.0.0.1:{dead}; }}\n\
         server {{\n listen 127.0.0.1:{{port}};\n\
          location / {{ proxy_pass http://u; proxy_http_version 1.1; proxy_set_header Connection \"\"; }}\n\
          location /dead {{ proxy_pass http://d; }}\n\
          location = /status {{ nowait_status; }}\n}}\n",
        up = up.port()
    ))
    .render();
    let s = Server::nowait(&conf);
    for _ in 0..3 {
        assert_eq!(get(s.port(), "/x").status, 200);
    }
    assert_eq!(get(s.port(), "/dead").status, 502);
    let page = common::body(&get(s.port(), "/status"));
    let peer = format!("upstream=\"u\",peer=\"127.0.0.1:{}\"", up.port());
    let dead_peer = format!("upstream=\"d\",peer=\"127.0.0.1:{dead}\"");
    for want in [
        format!("nowait_upstream_requests_total{{{peer}}} 3"),
        format!("nowait_upstream_failures_total{{{peer}}} 0"),
        format!("nowait_upstream_connections{{{peer},state=\"idle\"}} 1"),
        format!("nowait_upstream_connections{{{peer},state=\"active\"}} 0"),
        format!("nowait_upstream_response_seconds_count{{{peer}}} 3"),
        format!("nowait_upstream_requests_total{{{dead_peer}}} 1"),
        format!("nowait_upstream_failures_total{{{dead_peer}}} 1"),
    ] {
        assert!(page.contains(&want), "{want} missing in:\n{page}");
    }
    // One upstream connection carried the three requests.
    assert_eq!(up.connections(), 1);
}
