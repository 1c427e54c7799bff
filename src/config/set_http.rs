//! Setters for the `http` block and the settings inherited by servers and
//! locations.

use std::collections::HashMap;
use std::sync::Arc;

use super::build::{Builder, Scope, invalid, set_flag, set_once};
use super::inherit::{LocSet, SrvSet};
use super::model::{
    AddHeader, Aio, COMBINED_FORMAT, ErrorPage, HttpConf, LocationMatch, LogFormat, Root, Types,
};
use super::syntax::Directive;
use super::template::{Part, Template};
use super::value;

fn ls<'a>(scope: &'a mut Scope<'_>) -> &'a mut LocSet {
    scope
        .loc_set()
        .expect("the table allows this directive in http, server and location only")
}

fn ss<'a>(scope: &'a mut Scope<'_>) -> &'a mut SrvSet {
    scope
        .srv_set()
        .expect("the table allows this directive in http and server only")
}

/// `http { ... }`
pub fn http(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let Scope::Main(m) = scope else {
        unreachable!("the table allows http in main only")
    };
    if m.http.is_some() {
        return Err("\"http\" directive is duplicate".into());
    }
    let mut h = HttpConf::default();
    h.log_formats.insert(
        "combined".into(),
        LogFormat {
            name: "combined".into(),
            template: Template::parse(COMBINED_FORMAT).map_err(|e| e.to_string())?,
            escape: super::core_model::LogEscape::Default,
        },
    );
    b.walk(
        &mut Scope::Http(&mut h),
        d.block.as_deref().unwrap_or_default(),
    );
    b.http_end = Some(d.end.clone().unwrap_or_else(|| d.loc.clone()));
    m.http = Some(h);
    Ok(())
}

/// `types { type ext ...; ... }`: extensions map to types; a later mapping of
/// the same extension wins, with nginx's warning.
pub fn types(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    let mut types = set.types.as_deref().cloned().unwrap_or(Types {
        by_ext: HashMap::new(),
    });
    for entry in d.block.as_deref().unwrap_or_default() {
        if entry.block.is_some() {
            b.error("unexpected \"{\"", &entry.loc);
            continue;
        }
        for ext in &entry.args {
            let ext = ext.value.to_ascii_lowercase();
            if let Some(old) = types
                .by_ext
                .insert(ext.clone(), Arc::from(entry.name.as_str()))
            {
                if *old != *entry.name {
                    b.warn(
                        format!(
                            "duplicate extension \"{ext}\", content type: \"{}\", previous content type: \"{old}\"",
                            entry.name
                        ),
                        &entry.loc,
                    );
                }
            }
        }
    }
    set.types = Some(Arc::new(types));
    Ok(())
}

/// `default_type mime-type;`
pub fn default_type(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_once(&mut ls(scope).default_type, Arc::from(d.arg(0)), &d.name)
}

macro_rules! flag_setter {
    ($fn_name:ident, $field:ident) => {
        #[doc = concat!("`", stringify!($field), " on | off;`")]
        pub fn $fn_name(
            _: &mut Builder,
            scope: &mut Scope<'_>,
            d: &Directive,
        ) -> Result<(), String> {
            set_flag(&mut ls(scope).$field, d)
        }
    };
}

flag_setter!(sendfile, sendfile);

/// `merge_slashes on | off;`
pub fn merge_slashes(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ss(scope).merge_slashes, d)
}

/// `server_names_hash_max_size size;` (a number, as nginx's num slot).
pub fn server_names_hash_max_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows server_names_hash_max_size in http only")
    };
    let v = super::slot::num(d, 0)?;
    set_once(&mut h.server_names_hash_max_size, v, &d.name)
}

/// `server_names_hash_bucket_size size;`
pub fn server_names_hash_bucket_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let Scope::Http(h) = scope else {
        unreachable!("the table allows server_names_hash_bucket_size in http only")
    };
    let v = super::slot::num(d, 0)?;
    set_once(&mut h.server_names_hash_bucket_size, v, &d.name)
}
flag_setter!(tcp_nopush, tcp_nopush);
flag_setter!(tcp_nodelay, tcp_nodelay);
flag_setter!(aio_write, aio_write);
flag_setter!(aio_fast_path, aio_fast_path);

fn size_arg(d: &Directive, i: usize) -> Result<u64, String> {
    super::slot::size(d, i)
}

fn time_arg(d: &Directive, i: usize) -> Result<std::time::Duration, String> {
    super::slot::msec(d, i)
}

/// `directio size | off;` (`ngx_http_core_directio`: `off`, or an offset).
pub fn directio(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = match d.arg(0) {
        "off" => None,
        other => Some(super::value::size(other).ok_or_else(|| super::slot::invalid_value(d))?),
    };
    set_once(&mut ls(scope).directio, v, &d.name)
}

/// `directio_alignment size;` (an offset slot).
pub fn directio_alignment(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    // `O_DIRECT` aligns to a power of two (a block size); nginx takes any
    // offset and fails each read of the file with `EINVAL`.
    let v = size_arg(d, 0).and_then(|v| {
        v.is_power_of_two()
            .then_some(v)
            .ok_or_else(|| super::slot::invalid_value(d))
    })?;
    set_once(&mut ls(scope).directio_alignment, v, &d.name)
}

/// `sendfile_max_chunk size;`
pub fn sendfile_max_chunk(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = size_arg(d, 0)?;
    set_once(&mut ls(scope).sendfile_max_chunk, v, &d.name)
}

/// `client_max_body_size size;`
pub fn client_max_body_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = size_arg(d, 0)?;
    set_once(&mut ls(scope).client_max_body_size, v, &d.name)
}

/// `keepalive_requests number;`
pub fn keepalive_requests(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = super::slot::num(d, 0)?;
    set_once(&mut ls(scope).keepalive_requests, v, &d.name)
}

/// `send_timeout time;`
pub fn send_timeout(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = time_arg(d, 0)?;
    set_once(&mut ls(scope).send_timeout, v, &d.name)
}

/// `client_header_timeout time;`
pub fn client_header_timeout(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = time_arg(d, 0)?;
    set_once(&mut ss(scope).client_header_timeout, v, &d.name)
}

/// `client_header_buffer_size size;`
pub fn client_header_buffer_size(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = size_arg(d, 0)?;
    // nginx takes 0 (and then allocates a buffer of nothing); nowait
    // refuses it in the slot's words.
    if v == 0 {
        return Err(super::slot::invalid_value(d));
    }
    set_once(&mut ss(scope).client_header_buffer_size, v, &d.name)
}

/// `large_client_header_buffers number size;`
pub fn large_client_header_buffers(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    // `ngx_conf_set_bufs_slot`: both positive.
    let (n, size) = super::slot::bufs(d)?;
    set_once(
        &mut ss(scope).large_client_header_buffers,
        (n, size),
        &d.name,
    )
}

/// `aio off | threads[=pool];` — `aio on` (Linux native AIO with O_DIRECT)
/// is refused: nowait's file layer is threads plus non-blocking fast paths.
pub fn aio(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let v = match d.arg(0) {
        "off" => Aio::Off,
        "threads" => Aio::Threads(Template::literal(super::model::DEFAULT_POOL.0)),
        s if s.starts_with("threads=") => {
            let name = &s["threads=".len()..];
            if name.is_empty() {
                return Err(invalid(d, s));
            }
            Aio::Threads(b.template(name, &d.loc)?)
        }
        "on" => {
            return Err(format!(
                "{}: nowait does not implement native AIO, use \"aio threads\"",
                invalid(d, "on")
            ));
        }
        s => return Err(invalid(d, s)),
    };
    if let Aio::Threads(t) = &v {
        b.pool_uses.push((t.clone(), d.loc.clone()));
    }
    set_once(&mut ls(scope).aio, v, &d.name)
}

/// Makes a path template absolute against the prefix when it starts with a
/// relative literal, and drops a trailing slash for `root` as nginx does.
fn path_template(b: &Builder, mut t: Template, is_root: bool) -> Template {
    if let Some(Part::Literal(first)) = t.parts.first_mut() {
        if !first.starts_with('/') {
            *first = b.full_path(first).to_string_lossy().into_owned();
        }
    }
    if is_root && !t.parts.is_empty() {
        if let Some(Part::Literal(last)) = t.parts.last_mut() {
            if last.len() > 1 && last.ends_with('/') {
                last.pop();
            }
        }
    }
    t.source = t
        .parts
        .iter()
        .map(|p| match p {
            Part::Literal(s) => s.clone(),
            Part::Var(crate::config::vars::Var::Capture(n)) => format!("${n}"),
            Part::Var(v) => format!("${{{v}}}"),
        })
        .collect();
    t
}

fn root_or_alias(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
    alias: bool,
) -> Result<(), String> {
    let raw = d.arg(0);
    use crate::config::vars::Builtin;
    for forbidden in [Builtin::DocumentRoot, Builtin::RealpathRoot] {
        if Template::parse(raw).is_ok_and(|t| t.uses(forbidden)) {
            return Err(format!(
                "the ${} variable cannot be used in the \"{}\" directive",
                forbidden.name(),
                d.name
            ));
        }
    }
    let t = b.template(raw, &d.loc)?;
    let t = path_template(b, t, !alias);
    let set = ls(scope);
    match (&set.root, alias) {
        (Some(Root::Root(_)), true) => {
            return Err(
                "\"alias\" directive is duplicate, \"root\" directive was specified earlier".into(),
            );
        }
        (Some(Root::Alias(_)), false) => {
            return Err(
                "\"root\" directive is duplicate, \"alias\" directive was specified earlier".into(),
            );
        }
        _ => {}
    }
    let v = if alias { Root::Alias(t) } else { Root::Root(t) };
    set_once(&mut set.root, v, &d.name)?;
    let alias_len = match scope {
        Scope::Location(l) if alias => Some(match &l.matcher {
            LocationMatch::Regex { .. } => usize::MAX,
            LocationMatch::Exact(n)
            | LocationMatch::Prefix(n)
            | LocationMatch::PrefixNoRegex(n)
            | LocationMatch::Named(n) => n.len(),
        }),
        _ => None,
    };
    ls(scope).alias_len = Some(alias_len);
    Ok(())
}

/// `root path;`
pub fn root(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    root_or_alias(b, scope, d, false)
}

/// `alias path;`
pub fn alias(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    root_or_alias(b, scope, d, true)
}

/// `index file ...;` — several at one level accumulate.
pub fn index(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let mut list = Vec::new();
    for (i, w) in d.args.iter().enumerate() {
        if w.value.is_empty() {
            return Err(format!("index \"\" in \"{}\" directive is invalid", d.name));
        }
        if w.value.starts_with('/') && i + 1 != d.args.len() {
            // A warning in nginx: the index is kept and tried in its turn.
            b.warn(
                format!(
                    "only the last index in \"{}\" directive should be absolute",
                    d.name
                ),
                &d.loc,
            );
        }
        list.push(b.template(&w.value, &d.loc)?);
    }
    ls(scope).index.get_or_insert_with(Vec::new).extend(list);
    Ok(())
}

/// `error_page code ... [=[response]] uri;`
pub fn error_page(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let n = d.args.len();
    let uri = d.arg(n - 1);
    let mut last_code = n - 1;
    let mut overwrite = None;
    if let Some(eq) = d.args[n - 2].value.strip_prefix('=') {
        last_code = n - 2;
        overwrite = Some(if eq.is_empty() {
            None
        } else {
            match value::number(eq) {
                Some(c) if c <= 999 => Some(c as u16),
                _ => return Err(format!("invalid value \"{}\"", d.arg(n - 2))),
            }
        });
    }
    if last_code == 0 {
        // `error_page =200 /x;`: nginx names the value that stands where
        // a code should.
        return Err(format!("invalid value \"{}\"", d.arg(0)));
    }
    let mut codes = Vec::new();
    for w in &d.args[..last_code] {
        match value::number(&w.value) {
            Some(c) if (300..=599).contains(&c) && c != 499 => codes.push(c as u16),
            Some(_) => return Err(format!("value \"{}\" must be between 300 and 599", w.value)),
            None => return Err(format!("invalid value \"{}\"", w.value)),
        }
    }
    let uri = b.template(uri, &d.loc)?;
    ls(scope)
        .error_pages
        .get_or_insert_with(Vec::new)
        .push(ErrorPage {
            codes,
            overwrite,
            uri,
        });
    Ok(())
}

/// `client_body_temp_path path [level1 [level2 [level3]]];`
pub fn client_body_temp_path(
    b: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    if ls(scope).client_body_temp_path.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let p = super::slot::path(b, d)?;
    set_once(&mut ls(scope).client_body_temp_path, p, &d.name)
}

/// `add_header name value [always];`
pub fn add_header(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let h = header_entry(b, d)?;
    ls(scope).add_headers.get_or_insert_with(Vec::new).push(h);
    Ok(())
}

/// The field of an `add_header` or `add_trailer` directive.
pub(super) fn header_entry(b: &mut Builder, d: &Directive) -> Result<AddHeader, String> {
    let always = match d.args.get(2) {
        None => false,
        Some(w) if w.value == "always" => true,
        Some(w) => return Err(format!("invalid parameter \"{}\"", w.value)),
    };
    let name = d.arg(0);
    if name.is_empty() || !name.bytes().all(|c| c.is_ascii_graphic() && c != b':') {
        return Err(invalid(d, name));
    }
    let value = b.template(d.arg(1), &d.loc)?;
    Ok(AddHeader {
        name: name.to_string(),
        value,
        always,
    })
}
