//! Setters for the main and `events` contexts.

use super::build::{Builder, Scope, invalid, set_flag, set_once};
use super::model::{
    ErrorLogConf, EventsConf, LogLevel, LogTarget, ThreadPoolConf, WorkerProcesses,
};
use super::syntax::Directive;
use super::value;

/// The most worker threads `worker_processes` may ask for.
pub const MAX_WORKERS: usize = 1024;
/// The most threads one `thread_pool` may have.
pub const MAX_POOL_THREADS: usize = 4096;

/// The main context's values (a directive the table allows there only).
pub(super) fn main_set<'a>(scope: &'a mut Scope<'_>) -> &'a mut super::build::MainSet {
    match scope {
        Scope::Main(m) => m,
        _ => unreachable!("the table allows this directive in main only"),
    }
}

/// `env variable[=value];` (main): nginx's `ngx_set_env`, which splits at
/// the first `=`. A name that is empty or holds a NUL byte cannot be a
/// variable's: nginx passes it on, nowait refuses it.
pub fn env(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let arg = d.arg(0);
    let (name, value) = match arg.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (arg, None),
    };
    if name.is_empty() || arg.contains('\0') {
        return Err(format!("invalid environment variable \"{arg}\""));
    }
    main_set(scope).env.push(super::model::EnvVar {
        name: name.to_owned(),
        value,
    });
    Ok(())
}

/// `worker_processes number | auto;`
pub fn worker_processes(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let v = match d.arg(0) {
        "auto" => WorkerProcesses::Auto,
        s => match value::number(s) {
            Some(n) if (1..=MAX_WORKERS as u64).contains(&n) => WorkerProcesses::Count(n as usize),
            // nginx takes 0 (and serves nothing); nowait refuses it.
            _ => return Err(super::slot::invalid_value(d)),
        },
    };
    set_once(&mut main_set(scope).worker_processes, v, &d.name)
}

/// `user user [group];`
pub fn user(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let m = main_set(scope);
    let group = (d.args.len() == 2).then(|| d.arg(1).to_string());
    set_once(&mut m.user, (d.arg(0).to_string(), group), &d.name)?;
    m.user_loc = Some(d.loc.clone());
    Ok(())
}

/// `daemon on | off;`
pub fn daemon(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut main_set(scope).daemon, d)
}

/// `pid file;`
pub fn pid(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let p = b.full_path(d.arg(0));
    set_once(&mut main_set(scope).pid, p, &d.name)
}

/// `error_log file | stderr [level];`
pub fn error_log(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let target = match d.arg(0) {
        "stderr" => LogTarget::Stderr,
        p if p.starts_with("syslog:") || p.starts_with("memory:") => {
            return Err(format!(
                "\"{}\" error logs are not implemented yet",
                p.split(':').next().unwrap_or(p)
            ));
        }
        p => LogTarget::File(b.full_path(p)),
    };
    let level = match d.args.get(1) {
        None => LogLevel::Error,
        Some(w) => LogLevel::from_name(&w.value)
            .ok_or_else(|| format!("invalid log level \"{}\"", w.value))?,
    };
    main_set(scope)
        .error_logs
        .push(ErrorLogConf { target, level });
    Ok(())
}

/// `thread_pool name threads=number [max_queue=number];`, with nginx's messages.
pub fn thread_pool(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let name = d.arg(0).to_string();
    if name.is_empty() {
        return Err(invalid(d, ""));
    }
    let mut threads = None;
    let mut max_queue = super::model::DEFAULT_POOL.2;
    for w in &d.args[1..] {
        let v = w.value.as_str();
        if let Some(n) = v.strip_prefix("threads=") {
            match value::number(n) {
                Some(n) if (1..=MAX_POOL_THREADS as u64).contains(&n) => threads = Some(n as usize),
                _ => return Err(format!("invalid threads value \"{v}\"")),
            }
        } else if let Some(n) = v.strip_prefix("max_queue=") {
            match value::number(n) {
                Some(n) if n <= u32::MAX as u64 => max_queue = n as usize,
                _ => return Err(format!("invalid max_queue value \"{v}\"")),
            }
        } else {
            return Err(format!("invalid parameter \"{v}\""));
        }
    }
    let Some(threads) = threads else {
        return Err(format!("\"{}\" must have \"threads\" parameter", d.name));
    };
    let m = main_set(scope);
    if m.thread_pools.iter().any(|p| p.name == name) {
        return Err(format!("duplicate thread pool \"{name}\""));
    }
    m.thread_pools.push(ThreadPoolConf {
        name,
        threads,
        max_queue,
        loc: Some(d.loc.clone()),
    });
    Ok(())
}

/// `include` is expanded by the reader before the table sees the tree; the
/// entry exists so that the reference lists it and contexts are checked.
pub fn include(_: &mut Builder, _: &mut Scope<'_>, _: &Directive) -> Result<(), String> {
    Ok(())
}

/// `events { ... }`
pub fn events(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let m = main_set(scope);
    if m.events.is_some() {
        return Err("\"events\" directive is duplicate".into());
    }
    let mut ev = EventsConf::default();
    let mut seen = std::mem::take(&mut m.events_set);
    b.walk(
        &mut Scope::Events(&mut ev, &mut seen),
        d.block.as_deref().unwrap_or_default(),
    );
    m.events = Some(ev);
    m.events_set = seen;
    Ok(())
}

fn events_scope<'a>(
    scope: &'a mut Scope<'_>,
) -> (&'a mut EventsConf, &'a mut super::build::EventsSet) {
    match scope {
        Scope::Events(e, s) => (e, s),
        _ => unreachable!("the table allows this directive in events only"),
    }
}

fn once(seen: &mut bool, d: &Directive) -> Result<(), String> {
    if std::mem::replace(seen, true) {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    Ok(())
}

/// `worker_connections number;`
pub fn worker_connections(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let (ev, seen) = events_scope(scope);
    once(&mut seen.worker_connections, d)?;
    // `ngx_event_connections`: a number, or `invalid number "x"`. Too few
    // for the listening sockets is checked once they are known.
    match value::number(d.arg(0)) {
        Some(n) if n <= i32::MAX as u64 => ev.worker_connections = n as usize,
        _ => return Err(format!("invalid number \"{}\"", d.arg(0))),
    }
    Ok(())
}

/// `accept_mutex on | off;`
pub fn accept_mutex(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (ev, seen) = events_scope(scope);
    once(&mut seen.accept_mutex, d)?;
    let mut v = None;
    set_flag(&mut v, d)?;
    ev.accept_mutex = v.unwrap_or_default();
    Ok(())
}

/// `multi_accept on | off;`
pub fn multi_accept(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (ev, seen) = events_scope(scope);
    once(&mut seen.multi_accept, d)?;
    let mut v = None;
    set_flag(&mut v, d)?;
    ev.multi_accept = v.unwrap_or_default();
    Ok(())
}

/// `accept_mutex_delay time;` (`ngx_conf_set_msec_slot`).
pub fn accept_mutex_delay(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let (ev, seen) = events_scope(scope);
    once(&mut seen.accept_mutex_delay, d)?;
    ev.accept_mutex_delay = super::slot::msec(d, 0)?;
    Ok(())
}

/// The longest `loop_turn_budget` accepted: a turn that long is no budget.
const MAX_TURN_BUDGET: std::time::Duration = std::time::Duration::from_secs(1);

/// `loop_turn_budget time | off;` (nowait's own): a time in nginx's syntax,
/// or in microseconds with `us` (`250us`), from 1 µs to 1 s.
pub fn loop_turn_budget(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let (ev, seen) = events_scope(scope);
    once(&mut seen.turn_budget, d)?;
    let s = d.arg(0);
    ev.turn_budget = match s {
        "off" => None,
        _ => {
            let t = match s.strip_suffix("us") {
                Some(n) => value::number(n).map(std::time::Duration::from_micros),
                None => value::time(s, true),
            };
            match t {
                Some(t) if !t.is_zero() && t <= MAX_TURN_BUDGET => Some(t),
                _ => return Err(super::slot::invalid_value(d)),
            }
        }
    };
    Ok(())
}

/// `use epoll;` — the only event method nowait has on Linux.
pub fn use_method(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let (_, seen) = events_scope(scope);
    once(&mut seen.use_method, d)?;
    match d.arg(0) {
        "epoll" => Ok(()),
        m @ ("select" | "poll" | "kqueue" | "eventport" | "/dev/poll") => Err(format!(
            "invalid event type \"{m}\": nowait uses epoll only"
        )),
        m => Err(format!("invalid event type \"{m}\"")),
    }
}
