//! The access phase (`allow`/`deny`, then `auth_basic`, combined by
//! `satisfy all | any`) and nginx's post-access verdict
//! (`ngx_http_core_access_phase`, `ngx_http_core_post_access_phase`,
//! `ngx_http_core_auth_delay`).

use crate::config::access_model::{AccessMatch, Satisfy};
use crate::config::inherit::LocConf;
use crate::http::status::Status;
use crate::log::Level;

use super::{AuthWait, UNAUTHORIZED, Verdict, Wait, auth_basic, log};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;
use crate::server::core::site::Site;
use crate::server::engine::client_addr::ClientAddr;

/// What `allow`/`deny` say about the request's address: `None` when no
/// rule of its family applies (`ngx_http_access_handler`). A unix-domain
/// client meets only `all` and `unix:` (nginx's `rules_un`).
pub(super) fn rules_allow(conf: &LocConf, peer: &ClientAddr) -> Option<bool> {
    let Some(ip) = peer.ip() else {
        return conf
            .access_rules
            .iter()
            .find(|rule| matches!(rule.matches, AccessMatch::All | AccessMatch::Unix))
            .map(|rule| !rule.deny);
    };
    let ip = match ip {
        std::net::IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => std::net::IpAddr::V4(v4),
            None => std::net::IpAddr::V6(v6),
        },
        v4 => v4,
    };
    conf.access_rules
        .iter()
        .find(|rule| match rule.matches {
            AccessMatch::All => true,
            AccessMatch::Unix => false,
            AccessMatch::Cidr(c) => c.contains(ip),
        })
        .map(|rule| !rule.deny)
}

/// A 401 or 403 from an access module: under `satisfy all` it is the
/// answer; under `any` it is kept (a 401 over a 403) and the next module
/// asked. Anything else (500) is the answer either way. `Some`: the answer.
pub(super) fn settle(satisfy: Satisfy, code: &mut Option<Reply>, reply: Reply) -> Option<Reply> {
    let status = reply.status;
    if satisfy == Satisfy::All || (status != UNAUTHORIZED && status != Status::FORBIDDEN) {
        return Some(reply);
    }
    if code.as_ref().map(|c| c.status) != Some(UNAUTHORIZED) {
        *code = Some(reply);
    }
    None
}

/// [`settle`], with the answer made final by [`deny`].
pub(super) fn refused(r: &Req<'_>, code: &mut Option<Reply>, reply: Reply) -> Option<Verdict> {
    settle(r.conf.satisfy, code, reply).map(|reply| deny(r, reply))
}

/// The final refusal of the access phase: a 401 waits `auth_delay` first
/// (`ngx_http_core_auth_delay`), so that guessing passwords is slow.
pub(super) fn deny(r: &Req<'_>, reply: Reply) -> Verdict {
    let delay = r.conf.auth_delay;
    if reply.status != UNAUTHORIZED || delay.is_zero() {
        return Verdict::Deny(Box::new(reply));
    }
    log(
        r,
        Level::Info,
        format_args!("delaying unauthorized request"),
    );
    Verdict::Wait(Wait::Unauthorized(delay, Box::new(reply)))
}

/// The access phase: `allow`/`deny`, then `auth_basic`.
pub(super) fn access_phase(site: &Site, r: &mut Req<'_>) -> Verdict {
    let conf = r.conf;
    let mut code = None;
    match rules_allow(conf, &r.peer) {
        None => {}
        Some(true) if conf.satisfy == Satisfy::Any => return Verdict::Pass,
        Some(true) => {}
        Some(false) => {
            if conf.satisfy == Satisfy::All {
                log(r, Level::Error, format_args!("access forbidden by rule"));
            }
            if let Some(v) = refused(r, &mut code, Reply::special(Status::FORBIDDEN)) {
                return v;
            }
        }
    }
    if let (Some(realm), Some(file)) = (&conf.auth_basic, &conf.auth_basic_user_file) {
        let realm = r.expand(realm);
        if realm != b"off" {
            match auth_basic::credentials(r.head) {
                None => {
                    log(
                        r,
                        Level::Info,
                        format_args!("no user/password was provided for basic authentication"),
                    );
                    if let Some(v) = refused(r, &mut code, auth_basic::challenge(&realm)) {
                        return v;
                    }
                }
                Some(creds) => {
                    let path = auth_basic::user_file(site, &r.expand(file));
                    return Verdict::Wait(Wait::Auth(Box::new(AuthWait {
                        creds,
                        realm,
                        path,
                        code,
                    })));
                }
            }
        }
    }
    post_access(r, code)
}

/// nginx's post-access phase: under `satisfy any`, the kept refusal when
/// no module allowed.
pub(super) fn post_access(r: &Req<'_>, code: Option<Reply>) -> Verdict {
    match code {
        None => Verdict::Pass,
        Some(reply) => {
            if reply.status == Status::FORBIDDEN {
                log(r, Level::Error, format_args!("access forbidden by rule"));
            }
            Verdict::Deny(Box::new(reply))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::access_model::{AccessRule, parse_cidr};

    fn rules(list: &[(bool, &str)]) -> LocConf {
        LocConf {
            access_rules: list
                .iter()
                .map(|&(deny, m)| AccessRule {
                    deny,
                    matches: match m {
                        "all" => AccessMatch::All,
                        "unix:" => AccessMatch::Unix,
                        c => AccessMatch::Cidr(parse_cidr(c).unwrap().cidr()),
                    },
                })
                .collect(),
            ..LocConf::default()
        }
    }

    fn peer(s: &str) -> ClientAddr {
        ClientAddr::Inet(std::net::SocketAddr::new(s.parse().unwrap(), 1))
    }

    #[test]
    fn the_first_rule_of_the_family_decides() {
        let c = rules(&[(false, "127.0.0.1"), (true, "all")]);
        assert_eq!(rules_allow(&c, &peer("127.0.0.1")), Some(true));
        assert_eq!(rules_allow(&c, &peer("::ffff:127.0.0.1")), Some(true));
        assert_eq!(rules_allow(&c, &peer("10.0.0.1")), Some(false));
        assert_eq!(rules_allow(&c, &peer("::1")), Some(false));
        // Rules of another family only: no decision.
        let v4 = rules(&[(true, "10.0.0.0/8"), (true, "unix:")]);
        assert_eq!(rules_allow(&v4, &peer("::1")), None);
        assert_eq!(rules_allow(&v4, &peer("127.0.0.1")), None);
        assert_eq!(rules_allow(&rules(&[]), &peer("127.0.0.1")), None);
    }

    #[test]
    fn a_unix_domain_client_meets_all_and_unix_only() {
        let unix = ClientAddr::unix(None);
        // access.t: `deny unix:` and `deny all` refuse it, `allow` either
        // lets it in, an address rule is not its family's.
        assert_eq!(rules_allow(&rules(&[(true, "unix:")]), &unix), Some(false));
        assert_eq!(rules_allow(&rules(&[(true, "all")]), &unix), Some(false));
        assert_eq!(rules_allow(&rules(&[(false, "unix:")]), &unix), Some(true));
        let c = rules(&[(false, "127.0.0.1"), (false, "unix:"), (true, "all")]);
        assert_eq!(rules_allow(&c, &unix), Some(true));
        assert_eq!(rules_allow(&rules(&[(true, "0.0.0.0/0")]), &unix), None);
        // And `unix:` is no inet client's.
        assert_eq!(
            rules_allow(&rules(&[(true, "unix:")]), &peer("127.0.0.1")),
            None
        );
    }

    #[test]
    fn satisfy_any_keeps_a_401_over_a_403() {
        let mut code = None;
        let any = Satisfy::Any;
        assert!(settle(any, &mut code, Reply::special(Status::FORBIDDEN)).is_none());
        assert!(settle(any, &mut code, auth_basic::challenge(b"x")).is_none());
        assert!(settle(any, &mut code, Reply::special(Status::FORBIDDEN)).is_none());
        assert_eq!(code.map(|c| c.status), Some(UNAUTHORIZED));
        let error = Reply::special(Status::INTERNAL_SERVER_ERROR);
        assert!(settle(any, &mut None, error).is_some());
        let all = Satisfy::All;
        assert!(settle(all, &mut None, Reply::special(Status::FORBIDDEN)).is_some());
    }
}
