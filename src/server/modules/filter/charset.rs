//! The charset filter's header part (`ngx_http_charset_header_filter`):
//! which charset a reply is sent in (`charset`, an upstream's
//! `X-Accel-Charset`), which it is in (the type's own `charset=`, else
//! `source_charset`), and whether its body must be recoded between them
//! with a `charset_map`.
//!
//! The decision follows nginx's branch by branch, including what it logs
//! (`no "charset_map" between the charsets …`, `unknown charset … to
//! override`) and its refusals: no charset on a 301 or 302, no recoding of
//! a body with a `Content-Encoding`.

use crate::config::filter_model::CharsetSpec;
use crate::config::inherit::LocConf;
use crate::config::template::Part;
use std::sync::Arc;

use crate::http::charset::{Charsets, Recoder, Table};
use crate::log::Level;

use super::{Passing, has_content_encoding, mime};
use crate::server::core::reply::Reply;
use crate::server::core::request::Req;

/// A charset a reply is named to be in: its name, and its index among the
/// configuration's charsets if it has one there.
struct Named {
    name: String,
    index: Option<usize>,
}

/// What the filter concluded about a reply.
enum Decision {
    /// Leave it as it is.
    Leave,
    /// A `$variable` naming a charset has no value: nginx fails the
    /// request (its header filter returns an error; nothing is sent and
    /// the connection closes).
    Fail,
    /// Log that a name was not found, and leave it.
    Log(String),
    /// Send it in `name`; `own_type`: drop the type's own `charset=`;
    /// `recode`: recode the body with this table.
    Set {
        name: String,
        own_type: bool,
        recode: Option<Arc<Table>>,
    },
}

/// Decides the reply's charset; sets it (and the type without its own
/// `charset=` when it is replaced); returns the recoder when the body must
/// be recoded.
pub fn header(r: &Req<'_>, conf: &LocConf, reply: &mut Reply, p: &mut Passing) -> Option<Recoder> {
    match decide(r, conf, reply) {
        Decision::Leave => None,
        Decision::Fail => {
            reply.abort = true;
            reply.close = true;
            None
        }
        Decision::Log(msg) => {
            r.error_log().log(
                Level::Error,
                Some(r.conn_no),
                format_args!("{msg}{}", r.log_context()),
            );
            None
        }
        Decision::Set {
            name,
            own_type: own,
            recode,
        } => {
            if own {
                own_type(reply);
            }
            set_charset(reply, &name);
            let recoder = Recoder::new(recode?);
            if !recoder.keeps_length() {
                p.length = None;
                reply.length_override = None;
            }
            Some(recoder)
        }
    }
}

/// The charset the filter would send `reply` in, deciding without logging
/// (the autoindex module writes its HTML for it).
pub fn destination_name(r: &Req<'_>, conf: &LocConf, reply: &Reply) -> Option<String> {
    match decide(r, conf, reply) {
        Decision::Set { name, .. } => Some(name),
        _ => None,
    }
}

/// `ngx_http_charset_header_filter`'s decision, branch by branch.
fn decide(r: &Req<'_>, conf: &LocConf, reply: &Reply) -> Decision {
    let empty = Charsets::default();
    let charsets = r.site.config.http.as_ref().map_or(&empty, |h| &h.charsets);
    if reply.content_type.is_none() {
        return Decision::Leave;
    }
    let dst = match destination(r, conf, reply, charsets) {
        Ok(Some(Some(d))) => d,
        Ok(Some(None)) => return Decision::Fail,
        Ok(None) => return Decision::Leave,
        Err(msg) => return Decision::Log(msg),
    };
    let set = |own_type, recode| Decision::Set {
        name: dst.name.clone(),
        own_type,
        recode,
    };
    let src = match reply.charset.as_deref().filter(|c| !c.is_empty()) {
        Some(c) => named(charsets, c.to_string()),
        None => match &conf.source_charset {
            CharsetSpec::Off => return set(false, None),
            spec => match value(r, spec) {
                Some(name) => named(charsets, name),
                None => return Decision::Fail,
            },
        },
    };
    let no_map = || {
        Decision::Log(format!(
            "no \"charset_map\" between the charsets \"{}\" and \"{}\"",
            src.name, dst.name
        ))
    };
    let (Some(si), Some(di)) = (src.index, dst.index) else {
        let same = src.index == dst.index
            && src.name.len() >= dst.name.len()
            && src.name.as_bytes()[..dst.name.len()].eq_ignore_ascii_case(dst.name.as_bytes());
        return if same { set(false, None) } else { no_map() };
    };
    if si == di {
        return set(true, None);
    }
    if has_content_encoding(reply) {
        return Decision::Leave;
    }
    match charsets.table(si, di) {
        Some(table) => set(true, Some(table)),
        None => no_map(),
    }
}

/// The charset the reply is to be sent in (`ngx_http_destination_charset`);
/// `Ok(None)` when the filter leaves the reply alone, `Ok(Some(None))` when
/// its variable has no value, `Err` with what to log for an unknown
/// `X-Accel-Charset`.
fn destination(
    r: &Req<'_>,
    conf: &LocConf,
    reply: &Reply,
    charsets: &Charsets,
) -> Result<Option<Option<Named>>, String> {
    if let Some(over) = reply.override_charset.as_deref().filter(|c| !c.is_empty()) {
        let n = named(charsets, over.to_string());
        if n.index.is_none() {
            return Err(format!("unknown charset \"{over}\" to override"));
        }
        return Ok(Some(Some(n)));
    }
    if conf.charset == CharsetSpec::Off {
        return Ok(None);
    }
    if reply.charset.as_deref().is_some_and(|c| !c.is_empty()) {
        if !conf.override_charset {
            return Ok(None);
        }
    } else if !conf.charset_types.matches(mime(reply)) {
        return Ok(None);
    }
    Ok(Some(
        value(r, &conf.charset).map(|name| named(charsets, name)),
    ))
}

/// The name a `charset` or `source_charset` gives for this request;
/// `None` when its variable has no value.
fn value(r: &Req<'_>, spec: &CharsetSpec) -> Option<String> {
    match spec {
        CharsetSpec::Off => Some(String::new()),
        CharsetSpec::Name(n) => Some(n.clone()),
        CharsetSpec::Var(t) => match t.parts.as_slice() {
            [Part::Var(v)] => r
                .var(v, None)
                .map(|b| String::from_utf8_lossy(&b).into_owned()),
            _ => Some(r.expand_lossy(t)),
        },
    }
}

fn named(charsets: &Charsets, name: String) -> Named {
    let index = charsets.find(&name);
    Named { name, index }
}

/// `ngx_http_set_charset`: no charset for a redirect (old browsers took it
/// for the next page's).
fn set_charset(reply: &mut Reply, name: &str) {
    if matches!(reply.status.0, 301 | 302) {
        reply.charset = None;
        return;
    }
    reply.charset = Some(name.to_string());
}

/// The type without the `charset=` it carried (nginx sets
/// `content_type.len` to `content_type_len`): the new charset is written
/// after it.
fn own_type(reply: &mut Reply) {
    if let (Some(ct), Some(n)) = (reply.content_type.as_mut(), reply.content_type_len.take()) {
        ct.to_mut().truncate(n);
    }
}

/// Writes the charset into the type (`type; charset=name`) when the type
/// does not name one itself, as nginx's header filter does; the filters
/// after this one see the final value.
pub fn fold(reply: &mut Reply) {
    if reply.content_type_len.is_some() {
        return;
    }
    let Some(cs) = reply.charset.take().filter(|c| !c.is_empty()) else {
        return;
    };
    if let Some(ct) = reply.content_type.as_mut() {
        let ct = ct.to_mut();
        ct.push_str("; charset=");
        ct.push_str(&cs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::status::Status;
    use crate::server::core::reply::Body;

    #[test]
    fn the_charset_is_written_after_a_type_without_one() {
        let mut reply = Reply::new(Status::OK, Body::Empty);
        reply.content_type = Some("text/xml".into());
        reply.charset = Some("utf-8".into());
        fold(&mut reply);
        assert_eq!(
            reply.content_type.as_deref(),
            Some("text/xml; charset=utf-8")
        );
        let mut up = Reply::new(Status::OK, Body::Empty);
        up.set_upstream_content_type("text/html; charset=B".into());
        fold(&mut up);
        assert_eq!(up.content_type.as_deref(), Some("text/html; charset=B"));
        own_type(&mut up);
        set_charset(&mut up, "A");
        fold(&mut up);
        assert_eq!(up.content_type.as_deref(), Some("text/html; charset=A"));
    }

    #[test]
    fn redirects_carry_no_charset() {
        let mut reply = Reply::new(Status::MOVED_PERMANENTLY, Body::Empty);
        reply.content_type = Some("text/html".into());
        set_charset(&mut reply, "utf-8");
        fold(&mut reply);
        assert_eq!(reply.content_type.as_deref(), Some("text/html"));
    }
}
