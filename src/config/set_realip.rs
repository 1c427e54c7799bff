//! Setters of the realip module (`set_real_ip_from`, `real_ip_header`,
//! `real_ip_recursive`, as `ngx_http_realip_module.c` reads them) and of
//! the two small content handlers `stub_status` and `empty_gif`.

use std::net::IpAddr;

use super::access_model::{Cidr, CidrParse, RealIpFrom, RealIpHeader, parse_cidr};
use super::build::{Builder, Scope, set_flag};
use super::inherit::LocSet;
use super::model::Handler;
use super::syntax::Directive;

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

/// The block of exactly one address.
fn host_block(ip: IpAddr) -> Cidr {
    match ip {
        IpAddr::V4(a) => Cidr::V4 {
            addr: u32::from(a),
            mask: u32::MAX,
        },
        IpAddr::V6(a) => Cidr::V6 {
            addr: a.octets(),
            mask: [0xff; 16],
        },
    }
}

/// `set_real_ip_from address | CIDR | unix: | hostname;` (a host name is
/// resolved now, on the main thread, to every address it has, as nginx's
/// `ngx_inet_resolve_host`).
pub fn set_real_ip_from(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = d.arg(0);
    let mut from = Vec::new();
    if v == "unix:" {
        from.push(RealIpFrom::Unix);
    } else {
        match parse_cidr(v) {
            Some(CidrParse::Exact(c)) => from.push(RealIpFrom::Cidr(c)),
            Some(CidrParse::LowBits(c)) => {
                b.warn(format!("low address bits of {v} are meaningless"), &d.loc);
                from.push(RealIpFrom::Cidr(c));
            }
            None => {
                let addrs = super::names::lookup(v, 0)
                    .map_err(|_| format!("host not found in set_real_ip_from \"{v}\""))?;
                for a in addrs {
                    let block = RealIpFrom::Cidr(host_block(a.ip()));
                    if !from.contains(&block) {
                        from.push(block);
                    }
                }
            }
        }
    }
    ls(scope)
        .real_ip_from
        .get_or_insert_with(Vec::new)
        .extend(from);
    Ok(())
}

/// `real_ip_header field | X-Real-IP | X-Forwarded-For | proxy_protocol;`
/// (the two known names are matched as written, as nginx's `ngx_strcmp`).
pub fn real_ip_header(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    if set.real_ip_header.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let header = match d.arg(0) {
        "X-Real-IP" => RealIpHeader::XRealIp,
        "X-Forwarded-For" => RealIpHeader::XForwardedFor,
        "proxy_protocol" => {
            return Err(
                "\"real_ip_header proxy_protocol\" is not supported: nowait does not implement the PROXY protocol"
                    .into(),
            );
        }
        other => RealIpHeader::Other(other.to_ascii_lowercase()),
    };
    set.real_ip_header = Some(header);
    Ok(())
}

/// `real_ip_recursive on | off;`
pub fn real_ip_recursive(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    set_flag(&mut ls(scope).real_ip_recursive, d)
}

/// `stub_status;` (nginx still takes, and ignores, one argument: the old
/// `stub_status on`).
pub fn stub_status(_: &mut Builder, scope: &mut Scope<'_>, _: &Directive) -> Result<(), String> {
    match scope {
        Scope::Location(l) => l.handler = Handler::StubStatus,
        Scope::Server(s) => s.handler = Handler::StubStatus,
        _ => unreachable!("the table allows stub_status in server and location only"),
    }
    Ok(())
}

/// `empty_gif;`
pub fn empty_gif(_: &mut Builder, scope: &mut Scope<'_>, _: &Directive) -> Result<(), String> {
    let Scope::Location(l) = scope else {
        unreachable!("the table allows empty_gif in location only")
    };
    l.handler = Handler::EmptyGif;
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::config::access_model::{RealIpFrom, RealIpHeader};
    use crate::config::load_text;
    use crate::config::model::{Handler, HttpConf};

    fn http(body: &str) -> HttpConf {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        load_text(&text)
            .unwrap_or_else(|e| panic!("{e:?}"))
            .config
            .http
            .unwrap()
    }

    fn errors(body: &str) -> Vec<String> {
        let text = format!("events {{}}\nhttp {{\n{body}\n}}\n");
        match load_text(&text) {
            Ok(_) => Vec::new(),
            Err(e) => e.into_iter().map(|e| e.message).collect(),
        }
    }

    #[test]
    fn realip_settings() {
        let h = http(
            "set_real_ip_from 127.0.0.1/32; set_real_ip_from localhost; set_real_ip_from unix:;\n\
             real_ip_header X-Forwarded-For; real_ip_recursive on;\n\
             server { location / { real_ip_header X-Client; } }",
        );
        let s = &h.servers[0];
        assert!(s.conf.real_ip_from.len() >= 3);
        assert!(s.conf.real_ip_from.contains(&RealIpFrom::Unix));
        assert_eq!(s.conf.real_ip_header, RealIpHeader::XForwardedFor);
        assert!(s.conf.real_ip_recursive);
        assert_eq!(
            s.locations[0].conf.real_ip_header,
            RealIpHeader::Other("x-client".into())
        );
    }

    #[test]
    fn realip_errors() {
        assert_eq!(
            errors("set_real_ip_from no.such.host.invalid;"),
            vec!["host not found in set_real_ip_from \"no.such.host.invalid\""]
        );
        assert_eq!(
            errors("real_ip_header X-Real-IP; real_ip_header X-Real-IP;"),
            vec!["\"real_ip_header\" directive is duplicate"]
        );
        assert_eq!(errors("real_ip_header proxy_protocol;").len(), 1);
    }

    #[test]
    fn content_handlers() {
        let h = http(
            "server { stub_status; location /g { empty_gif; } location /s { stub_status on; } }",
        );
        let s = &h.servers[0];
        assert_eq!(s.handler, Handler::StubStatus);
        assert_eq!(s.locations[0].handler, Handler::EmptyGif);
        assert_eq!(s.locations[1].handler, Handler::StubStatus);
    }
}
