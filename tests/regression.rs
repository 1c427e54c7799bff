//! One test per bug the serving tests found, named after the bug, so that
//! it cannot come back unnoticed. Each says what was wrong and where.

mod common;

use common::client::get;
use common::{Conf, Fixture, Server};

fn body(r: &common::Response) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

/// `error_page 404 @named` with `return 200 "text"` in the named location
/// answered 200; nginx keeps the error's status for a page served without
/// `=` (`r->err_status` overrides it in `ngx_http_send_header`). Fixed in
/// `src/server/handler.rs` (`error_page`).
#[test]
fn error_page_to_named_location_with_return_text_keeps_the_error_status() {
    let f = Fixture::build();
    let conf = Conf::server(
        "root {root};\n\
         error_page 404 @fallback;\n\
         location @fallback { return 200 \"fallback\"; }\n\
         location /eq/ { error_page 404 = @fallback; }",
    )
    .root(f.root())
    .render();
    let s = Server::tested(&conf);
    let r = get(s.port(), "/missing");
    assert_eq!((r.status, body(&r).as_str()), (404, "fallback"));
    // With `=`, the target's status.
    let r = get(s.port(), "/eq/missing");
    assert_eq!((r.status, body(&r).as_str()), (200, "fallback"));
}
