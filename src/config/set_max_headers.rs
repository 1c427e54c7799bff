//! `max_headers number;` (http, server): how many header lines a request
//! may carry. nginx 1.29.8's directive, backported by Debian to its nginx
//! 1.22.1; the check itself is made where the request's server is known
//! (`server::engine::h1::max_headers`).

use super::build::{Builder, Scope, set_once};
use super::slot;
use super::syntax::Directive;

/// nginx's default: a thousand lines.
pub const DEFAULT_MAX_HEADERS: u64 = 1000;

/// `max_headers number;` (`ngx_conf_set_num_slot`: any number, 0 included;
/// `"max_headers" directive invalid number` otherwise).
pub fn max_headers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = scope
        .srv_set()
        .expect("the table allows max_headers in http and server only");
    let n = slot::num(d, 0)?;
    set_once(&mut set.max_headers, n, &d.name)
}
