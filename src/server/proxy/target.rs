//! Where a `proxy_pass` sends a request (`ngx_http_proxy_eval` and the
//! static URL): the location's group, or for a URL with variables the
//! group its host names, an address, or a name the location's `resolver`
//! finds (a round-robin group of its own); the URI to send; TLS for
//! `https://`.

use std::borrow::Cow;
use std::sync::Arc;

use crate::config::model::ProxyTarget;
use crate::config::proxy_url::{self, Evaluated};
use crate::http::status::Status;
use crate::log::Level;
use crate::upstream::{PeerAddr, PeerGroup, PeerSpec};

use super::super::upstream::groups::Group;
use super::super::upstream::{Target, tls};
use super::request;
use crate::server::core::request::Req;
use crate::server::core::site::Site;

/// What the URL names, before the URI to send is made of it.
struct Url<'a> {
    /// The group it names.
    group: Arc<Group>,
    /// Its `scheme://host[:port]` as written (the default cache key's
    /// first part): the configuration's own text without variables.
    url_prefix: Cow<'a, str>,
    /// The URI part of the URL, if it has one.
    uri: Option<Cow<'a, str>>,
    /// The URL had variables (its URI is then sent as it is).
    dynamic: bool,
    /// `https://`: the TLS of the connections.
    tls: Option<tls::TlsTarget>,
}

/// Where `pass` sends `r`: the group, the URI to send, the TLS.
pub async fn target<'a>(
    site: &Site,
    r: &mut Req<'_>,
    pass: &'a crate::config::model::ProxyPass,
) -> Result<Target<'a>, Status> {
    let url = url(site, r, pass).await?;
    let uri = request::request_target(r, r.location, url.uri.as_deref(), url.dynamic);
    Ok(Target {
        group: url.group,
        url_prefix: url.url_prefix,
        uri,
        tls: url.tls,
    })
}

/// The group and URI a `proxy_pass` names for this request.
async fn url<'a>(
    site: &Site,
    r: &mut Req<'_>,
    pass: &'a crate::config::model::ProxyPass,
) -> Result<Url<'a>, Status> {
    match &pass.target {
        ProxyTarget::Static(url) => {
            let group = site.upstreams.get(&url.upstream).cloned().ok_or_else(|| {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!("no upstream \"{}\"{}", url.upstream, r.log_context()),
                );
                Status::INTERNAL_SERVER_ERROR
            })?;
            r.upstream.proxy_host = Some(url.host_header.clone());
            r.upstream.proxy_port = Some(url.port.clone());
            let source = &pass.url.source;
            let url_prefix = source.get(..url.key_start).unwrap_or(source);
            r.upstream.https = url.tls;
            let tls = if url.tls {
                Some(tls_target(site, r, pass, &group.host)?)
            } else {
                None
            };
            Ok(Url {
                url_prefix: Cow::Borrowed(url_prefix),
                group,
                uri: url.uri.as_deref().map(Cow::Borrowed),
                dynamic: false,
                tls,
            })
        }
        ProxyTarget::Dynamic => dynamic_target(site, r, pass).await,
    }
}

/// The TLS of a request's connections through `pass` to a group whose host
/// is `host`; a 500 when the location has no TLS made for it (it always
/// has: a location proxying over TLS gets its plan when it is merged).
fn tls_target(
    site: &Site,
    r: &Req<'_>,
    pass: &crate::config::model::ProxyPass,
    host: &str,
) -> Result<tls::TlsTarget, Status> {
    pass.tls
        .as_ref()
        .and_then(|plan| tls::target(site, r, plan, host))
        .ok_or(Status::INTERNAL_SERVER_ERROR)
}

/// `proxy_pass` with variables (`ngx_http_proxy_eval`): the URL is
/// evaluated, its host looked up among the groups, else used directly when
/// it is an address, else resolved by the location's `resolver` (without
/// one, nginx answers 502: `no resolver defined to resolve …`). The
/// addresses found make a round-robin group of their own.
async fn dynamic_target(
    site: &Site,
    r: &mut Req<'_>,
    pass: &crate::config::model::ProxyPass,
) -> Result<Url<'static>, Status> {
    let url = r.expand_lossy(&pass.url);
    let Evaluated {
        parsed,
        vars,
        scheme,
    } = proxy_url::evaluate(&url).map_err(|e| {
        r.error_log().log(
            Level::Error,
            Some(r.conn_no),
            format_args!("{e}{}", r.log_context()),
        );
        Status::INTERNAL_SERVER_ERROR
    })?;
    let rest = &url[scheme.prefix().len()..];
    r.upstream.https = scheme.tls;
    r.upstream.proxy_host = Some(vars.host_header.into());
    r.upstream.proxy_port = Some(vars.port.into());
    let uri = (!parsed.uri.is_empty()).then(|| Cow::Owned(parsed.uri.clone()));
    let url_prefix = Cow::Owned(url.get(..vars.key_start).unwrap_or(&url).to_string());
    if let Some(g) = site
        .upstreams
        .find(&parsed.host, parsed.port, !parsed.no_port)
    {
        let tls = if scheme.tls {
            Some(tls_target(site, r, pass, &g.host)?)
        } else {
            None
        };
        return Ok(Url {
            url_prefix,
            group: g.clone(),
            uri,
            dynamic: true,
            tls,
        });
    }
    // nginx's `u->resolved->host`: the name a group of its own is made for.
    let tls = if scheme.tls {
        Some(tls_target(site, r, pass, &parsed.host)?)
    } else {
        None
    };
    let specs = match parsed.addrs.first() {
        Some(addr) => {
            let name = addr.to_string();
            let addr = match addr {
                crate::config::model::UpstreamAddr::Inet(a) => PeerAddr::Inet(*a),
                crate::config::model::UpstreamAddr::Unix(p) => PeerAddr::Unix(p.clone()),
            };
            vec![PeerSpec::new(addr, &name, rest)]
        }
        None => {
            let Some(resolver) = r.conf.resolver.clone() else {
                r.error_log().log(
                    Level::Error,
                    Some(r.conn_no),
                    format_args!(
                        "no resolver defined to resolve {}{}",
                        parsed.host,
                        r.log_context()
                    ),
                );
                return Err(Status::BAD_GATEWAY);
            };
            let found = resolver
                .resolve(&parsed.host, r.conf.resolver_timeout)
                .await
                .map_err(|e| {
                    r.error_log().log(
                        Level::Error,
                        Some(r.conn_no),
                        format_args!(
                            "{} could not be resolved ({e}){}",
                            parsed.host,
                            r.log_context()
                        ),
                    );
                    Status::BAD_GATEWAY
                })?;
            found
                .into_iter()
                .map(|ip| {
                    let a = std::net::SocketAddr::new(ip, parsed.port);
                    PeerSpec::new(PeerAddr::Inet(a), &a.to_string(), rest)
                })
                .collect()
        }
    };
    let peers = PeerGroup::new(specs, Vec::new(), crate::upstream::Balance::RoundRobin)
        .map_err(|_| Status::INTERNAL_SERVER_ERROR)?;
    Ok(Url {
        url_prefix,
        group: Arc::new(Group {
            metrics: Default::default(),
            name: Arc::from(parsed.host.as_str()),
            peers,
            hash_key: None,
            keepalive: None,
            host: parsed.host,
            port: parsed.port,
        }),
        uri,
        dynamic: true,
        tls,
    })
}
