//! A response held back by `limit_rate` ends as soon as its client closes
//! the connection (nginx's `ngx_http_test_reading` while a write is
//! delayed), not at the next paced write: `stub_status` stops counting the
//! connection at once. Run with `NOWAIT_TEST_NGINX=1` to check it against
//! nginx.

mod common;

use std::io::Read;
use std::net::{Ipv4Addr, TcpStream};
use std::time::Duration;

use common::client::get;
use common::wait::until;
use common::{Conf, Server};

/// `Active connections: N` of the status page.
fn active(port: u16) -> Option<u32> {
    let page = get(port, "/status");
    String::from_utf8_lossy(&page.body)
        .lines()
        .next()?
        .strip_prefix("Active connections: ")?
        .trim()
        .parse()
        .ok()
}

#[test]
fn a_paced_response_ends_when_its_client_closes() {
    let conf = Conf::http(
        "server {
           listen 127.0.0.1:{port};
           location /slow { limit_rate 1; return 200 \"a slow answer\"; }
           location /status { stub_status; }
         }",
    )
    .render();
    let s = Server::tested(&conf);
    let mut c = TcpStream::connect((Ipv4Addr::LOCALHOST, s.port())).expect("connect");
    std::io::Write::write_all(&mut c, b"GET /slow HTTP/1.0\r\nHost: x\r\n\r\n").expect("send");
    // The first second's allowance comes at once; the rest waits a second
    // a byte.
    let mut first = [0u8; 1];
    c.read_exact(&mut first).expect("the first byte");
    assert_eq!(active(s.port()), Some(2));
    drop(c);
    // The next paced write would come a second later: far later than this.
    assert!(
        until(Duration::from_millis(500), || active(s.port()) == Some(1)),
        "still counted: {:?}",
        active(s.port())
    );
}
