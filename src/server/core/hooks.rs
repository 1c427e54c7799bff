//! The one seam between the request core and the modules: every hook at
//! which the core (or the engine, through it) hands a request to a module,
//! and the state a module keeps on the core's objects. nginx's modules
//! register into `cmcf->phases[]`, `ngx_http_top_header_filter`,
//! `ngx_http_top_body_filter` and the variables table; here the list is
//! written down once, by hook, and only this file names
//! [`crate::server::modules`] (tests/server_layers.rs).
//!
//! A module's insides stay out of sight: each hook names the few items the
//! core calls or keeps, never a module to roam in. A new module adds its
//! entry here and nothing elsewhere in the core.

use crate::config::model::Handler;
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::modules;

/// The post-read, pre-access and access phases (`realip`, `limit_req`,
/// `limit_conn`, `allow`/`deny`, `auth_basic`, `satisfy`), their
/// per-request state, their zones and their variables.
pub mod access {
    pub use crate::server::modules::access::auth_basic::credentials_of;
    pub use crate::server::modules::access::zones::{Limits, Registry};
    pub use crate::server::modules::access::{
        ReqAccess, Verdict, Wait, check, post_read, var, wait,
    };

    /// `$secure_link` and `$secure_link_expires`.
    pub mod secure_link {
        pub use crate::server::modules::access::secure_link::{expires, value};
    }
}

/// The server-rewrite and rewrite phases: a location's or a server's
/// script.
pub mod rewrite {
    pub use crate::server::modules::rewrite::{Flow, Paused, run};
}

/// The precontent phase.
pub mod try_files {
    pub use crate::server::modules::try_files::{Tried, applies, run};
}

/// The content handler of a location without another one: files,
/// `index`, `autoindex`, `gzip_static`; and where a URI maps on disk.
pub mod static_file {
    pub use crate::server::modules::static_file::{Fetch, Served, map_path, serve};
}

/// The output filters: the header part of each (decided once the reply's
/// head is known), the body part (applied while it is sent), and the
/// state a reply carries for them.
pub mod filter {
    pub use crate::server::modules::filter::{Filters, body, content_length, headers, source};
}

/// `expires`, `add_header`, `add_trailer`, and the `ETag` they may read.
pub mod headers_filter {
    pub use crate::server::modules::headers_filter::{apply, etag, trailers};
}

/// What SSI shares between a request and its subrequests, and its date
/// variables (`$date_local`, `$date_gmt`).
pub mod ssi {
    pub use crate::server::modules::ssi::{DEFAULT_TIMEFMT, Shared, date_variable};
}

/// The log phase: a request's access log lines, a rejected head's, a
/// subrequest's, and the wait for the writer before a close.
pub mod access_log {
    pub use crate::server::modules::access_log::{Written, rejected, request, subrequest, written};
}

/// The live status page's sampler, started with a generation.
pub mod status_ring {
    pub use crate::server::modules::status_ring::start;
}

/// The content handlers that answer without I/O, by the handler the
/// configuration chose for the location (`stub_status`, `empty_gif`,
/// `nowait_status`); `None` for those that must wait (files, the proxy).
pub fn answer_at_once(handler: Handler, site: &Site, r: &Req<'_>) -> Option<Box<Reply>> {
    match handler {
        Handler::StubStatus => Some(Box::new(modules::stub_status::stub_status(r))),
        Handler::EmptyGif => Some(Box::new(modules::stub_status::empty_gif(r))),
        Handler::Status => Some(Box::new(modules::status_page::reply(site, r))),
        Handler::Static | Handler::Proxy => None,
    }
}
