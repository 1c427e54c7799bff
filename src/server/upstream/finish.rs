//! What is left once the response is sent (nginx's
//! `ngx_http_upstream_finalize_request` and the cache's background
//! subrequest): the cache fill or `*_store` this request started is
//! renamed into place before the connection goes on, and a stale entry
//! that was served is refreshed by running the request again upstream
//! (`proxy_cache_background_update`).
//!
//! The engine registers [`after_response`] on the request
//! ([`crate::server::core::request::AfterResponse`]); the connection runs it
//! without knowing what it does.

use std::future::Future;
use std::pin::Pin;

use crate::io::client_stream::ClientStream;

use super::Proxied;
use super::protocol::Protocol;
use crate::server::core::reply::Body;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client::Client;
use crate::server::modules::access_log;

/// How long a connection, its response sent, waits for the cache fill or
/// `*_store` it started to be renamed into place before it goes on
/// (nginx renames before it finalizes the request, so that the next
/// request finds the entry). A disk slower than this delays no more.
pub const FILL_SETTLE_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Registers [`after_response`] when the request left something to do
/// after its response (a fill or store under way, a background update).
pub fn register<P: Protocol>(r: &mut Req<'_>) {
    if r.upstream.fill_done.is_some() || r.upstream.background_update {
        r.upstream.after_response = Some(after_response::<P>);
    }
}

/// The work [`register`] leaves: the fill settled, then the background
/// update, if any.
fn after_response<'x, 's, P: Protocol>(
    site: &'s Site,
    r: &'x mut Req<'s>,
    stream: &'x ClientStream,
    buf: &'x mut Vec<u8>,
    sent: u64,
) -> Pin<Box<dyn Future<Output = ()> + 'x>> {
    Box::pin(async move {
        settle_fill(r).await;
        if r.upstream.background_update {
            // The stale entry was sent; now refresh it, before the next
            // request, as nginx's background subrequest does.
            let mut client = Client::new(stream, buf);
            background_update::<P>(site, r, &mut client, sent).await;
        }
    })
}

/// `proxy_cache_background_update`: after a stale entry went to the
/// client, the request is run again upstream, as a clone of it
/// ([`Req::background_clone`]), through its plug-in's handler
/// ([`Protocol::rerun`]), to refresh it; its answer fills the cache and
/// goes nowhere else. Under `log_subrequest on` it is logged as nginx logs
/// its background subrequest, once the entry is in place: its own
/// `$status` and `$upstream_*` (`EXPIRED`), `$request_length` 0, and
/// `sent` — what the connection wrote for the main request — as
/// `$bytes_sent` and `$body_bytes_sent`.
async fn background_update<P: Protocol>(
    site: &Site,
    r: &Req<'_>,
    client: &mut Client<'_>,
    sent: u64,
) {
    let mut sr = r.background_clone();
    let pool = match &sr.conf.aio {
        crate::config::model::Aio::Threads(name) => site.pools.get(&sr.expand_lossy(name)).cloned(),
        crate::config::model::Aio::Off => None,
    };
    let files = sr.conf.file_layer(pool.as_ref());
    let head = match P::rerun(site, &mut sr, client, files).await {
        Proxied::Reply(rep) => {
            let head = rep.head_copy();
            if let Body::Stream(source) = rep.body {
                drain(source).await;
            }
            Some(head)
        }
        Proxied::Redirect(_) => None,
    };
    // The entry is renamed into place before the connection goes on, as
    // nginx's update has finished before its request does.
    if let Some(mut done) = sr.upstream.fill_done.take() {
        let _ = done.wait_for(|d| *d).await;
    }
    if let Some(head) = head {
        if sr.conf.log_subrequest {
            access_log::subrequest(&sr, sr.conf, &head, sent);
        }
    }
}

/// Waits, at most [`FILL_SETTLE_LIMIT`], for the fill or store `r`
/// started to end.
async fn settle_fill(r: &mut Req<'_>) {
    if let Some(mut done) = r.upstream.fill_done.take() {
        let _ = tokio::time::timeout(FILL_SETTLE_LIMIT, done.wait_for(|d| *d)).await;
    }
}

/// Reads a body to its end and drops it (a response the client asked only
/// the head of, but that a cache fill needs whole).
pub async fn drain(mut source: Box<dyn crate::body::Source>) {
    while let Ok(Some(_)) = std::future::poll_fn(|cx| source.poll_chunk(cx)).await {}
}
