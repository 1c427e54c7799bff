//! Listening sockets: bound once by the main thread (as root, before the
//! privilege drop), kept across reloads, handed to worker loops.
//!
//! An address with `reuseport` gets one `SO_REUSEPORT` socket per worker, and
//! the kernel spreads connections over them (brief §1C). Without it, one
//! socket is shared by every worker (see `docs/architecture.md` for what
//! `accept_mutex` changes then).
//!
//! A unix-domain socket (`listen unix:/path`) is bound as nginx binds it:
//! `bind()` makes the file (an existing one is `EADDRINUSE`), which is then
//! made mode 0666, and removed when the socket is closed for good (a
//! reload that drops the `listen`, the server's exit), by the privileged
//! helper when there is one. `-t` binds nothing, so leaves no file.

use std::collections::HashMap;
use std::io;
use std::path::Path;

use socket2::{Domain, Protocol, Socket, Type};

use crate::config::model::{Listen, ListenAddr};
use crate::log::Level;

/// What failed while binding, in nginx's words.
#[derive(Debug)]
pub struct BindError {
    /// The call that failed (`bind()`, `listen()`, `setsockopt(SO_REUSEPORT)`…).
    pub call: &'static str,
    /// The address.
    pub addr: ListenAddr,
    /// The cause.
    pub source: io::Error,
}

impl std::fmt::Display for BindError {
    /// `bind() to 0.0.0.0:80 failed (98: Address already in use)`,
    /// `bind() to unix:/run/x.sock failed (98: Address already in use)`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} to {} failed ({})",
            self.call,
            self.addr,
            crate::sys::error::errno_text(&self.source)
        )
    }
}

/// A line for the error log about the sockets that did not stop the
/// change (a unix-domain socket's file removed, or a `chmod()` or
/// `unlink()` that failed): the caller logs it where it logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Note {
    /// Its level.
    pub level: Level,
    /// Its text, in nginx's words.
    pub text: String,
}

/// The sockets of one address: one shared, or one per worker.
#[derive(Debug)]
pub struct AddrSockets {
    /// The listen options that created them (the first server's).
    pub listen: Listen,
    /// The sockets (non-blocking, listening); with `reuseport`, one per
    /// worker.
    pub sockets: Vec<Socket>,
}

/// Every listening socket, by address.
///
/// A unix-domain socket's file is removed when its socket is closed for
/// good: when [`Listeners::update`] drops its address, and by
/// [`Listeners::close`] at exit. Never on drop: the privileged helper is
/// forked holding a copy, which it drops without closing anything for the
/// serving process.
#[derive(Debug, Default)]
pub struct Listeners {
    /// Address → sockets.
    pub by_addr: HashMap<ListenAddr, AddrSockets>,
    /// What to log, taken by [`Listeners::take_notes`].
    notes: Vec<Note>,
}

fn bind_one(l: &Listen, reuseport: bool, notes: &mut Vec<Note>) -> Result<Socket, BindError> {
    let err = |call: &'static str| {
        move |source| BindError {
            call,
            addr: l.addr.clone(),
            source,
        }
    };
    let (domain, protocol) = match &l.addr {
        ListenAddr::Inet(a) if a.is_ipv4() => (Domain::IPV4, Some(Protocol::TCP)),
        ListenAddr::Inet(_) => (Domain::IPV6, Some(Protocol::TCP)),
        ListenAddr::Unix(_) => (Domain::UNIX, None),
    };
    let s = Socket::new(domain, Type::STREAM.nonblocking().cloexec(), protocol)
        .map_err(err("socket()"))?;
    // As nginx, on every listening socket (a no-op for unix-domain ones).
    s.set_reuse_address(true)
        .map_err(err("setsockopt(SO_REUSEADDR)"))?;
    if reuseport {
        s.set_reuse_port(true)
            .map_err(err("setsockopt(SO_REUSEPORT)"))?;
    }
    if domain == Domain::IPV6 {
        s.set_only_v6(l.ipv6only)
            .map_err(err("setsockopt(IPV6_V6ONLY)"))?;
    }
    tune(&s, l, None, notes);
    if let Some(n) = l.rcvbuf {
        s.set_recv_buffer_size(n)
            .map_err(err("setsockopt(SO_RCVBUF)"))?;
    }
    if let Some(n) = l.sndbuf {
        s.set_send_buffer_size(n)
            .map_err(err("setsockopt(SO_SNDBUF)"))?;
    }
    match &l.addr {
        ListenAddr::Inet(a) => crate::sys::privsep::bind(&s, *a).map_err(err("bind()"))?,
        ListenAddr::Unix(p) => {
            // bind() made the file; nginx makes it 0666 and goes on if
            // that fails.
            let chmod = crate::sys::privsep::bind_unix(&s, p).map_err(err("bind()"))?;
            if let Some(e) = chmod {
                notes.push(Note {
                    level: Level::Emerg,
                    text: format!(
                        "chmod() \"{}\" failed ({})",
                        p.display(),
                        crate::sys::error::errno_text(&e)
                    ),
                });
            }
        }
    }
    if let Err(e) = s.listen(l.backlog) {
        if let ListenAddr::Unix(p) = &l.addr {
            // The file this bind() made would keep the next start from
            // binding.
            drop(s);
            remove_file(p, notes);
        }
        return Err(err("listen()")(e));
    }
    Ok(s)
}

/// Removes a unix-domain socket's file (through the privileged helper
/// when there is one); a failure is noted in nginx's words.
fn remove_file(path: &Path, notes: &mut Vec<Note>) {
    if let Err(e) = crate::sys::privsep::remove_socket(path) {
        notes.push(Note {
            level: Level::Emerg,
            text: format!(
                "unlink() {} failed ({})",
                path.display(),
                crate::sys::error::errno_text(&e)
            ),
        });
    }
}

/// The sockets a configuration needs, as nginx decides them: one per
/// distinct address, the options of whichever `listen` wrote them; and a
/// specific address without `bind` is served by the wildcard socket of its
/// port when there is one (the connection's local address then picks the
/// server, see [`crate::server::core::vhost`]). A unix-domain socket always has its own.
pub fn wanted(listens: impl Iterator<Item = Listen>) -> Vec<Listen> {
    let mut out: Vec<Listen> = Vec::new();
    for l in listens {
        match out.iter_mut().find(|o| o.addr == l.addr) {
            Some(o) if l.has_options() => {
                *o = Listen {
                    default_server: o.default_server,
                    ..l
                }
            }
            Some(_) => {}
            None => out.push(l),
        }
    }
    let wildcard_ports: Vec<(bool, u16)> = out
        .iter()
        .filter_map(|l| l.addr.inet())
        .filter(|a| a.ip().is_unspecified())
        .map(|a| (a.is_ipv4(), a.port()))
        .collect();
    out.retain(|l| match l.addr.inet() {
        None => true,
        Some(a) => {
            a.ip().is_unspecified() || l.bind || !wildcard_ports.contains(&(a.is_ipv4(), a.port()))
        }
    });
    out
}

/// Sets the options of `listen` that apply to a listening socket however
/// it was made (`ngx_configure_listening_sockets`): `so_keepalive`,
/// `fastopen`, `deferred`. `before` is what a kept socket was set for: an
/// option it had and `l` has not is taken back where nginx does so
/// (`deferred`). A failure is an `[alert]` and the socket serves without
/// the option, as in nginx.
fn tune(s: &Socket, l: &Listen, before: Option<&Listen>, notes: &mut Vec<Note>) {
    if matches!(l.addr, ListenAddr::Unix(_)) {
        return;
    }
    let mut failed = |what: String, e: io::Error| {
        notes.push(Note {
            level: Level::Alert,
            text: format!("{what} for {} failed, ignored ({})", l.addr, errno_text(&e)),
        })
    };
    if let Some(k) = l
        .so_keepalive
        .filter(|k| before.and_then(|b| b.so_keepalive) != Some(*k))
    {
        if let Err(e) = s.set_keepalive(k.on) {
            failed(format!("setsockopt(SO_KEEPALIVE, {})", i32::from(k.on)), e);
        }
        let ka = socket2::TcpKeepalive::new();
        let parts = [
            (k.idle, "TCP_KEEPIDLE"),
            (k.interval, "TCP_KEEPINTVL"),
            (k.count, "TCP_KEEPCNT"),
        ];
        for (v, name) in parts {
            let Some(v) = v else { continue };
            let set = match name {
                "TCP_KEEPIDLE" => ka
                    .clone()
                    .with_time(std::time::Duration::from_secs(v.into())),
                "TCP_KEEPINTVL" => ka
                    .clone()
                    .with_interval(std::time::Duration::from_secs(v.into())),
                _ => ka.clone().with_retries(v),
            };
            if let Err(e) = s.set_tcp_keepalive(&set) {
                failed(format!("setsockopt({name}, {v})"), e);
            }
        }
    }
    if let Some(n) = l
        .fastopen
        .filter(|&n| before.and_then(|b| b.fastopen) != Some(n))
    {
        if let Err(e) = crate::sys::socket::set_fastopen(s, n) {
            failed(format!("setsockopt(TCP_FASTOPEN, {n})"), e);
        }
    }
    let was = before.is_some_and(|b| b.deferred);
    if l.deferred || was {
        let secs = if l.deferred { l.deferred_secs } else { 0 };
        if before.is_none_or(|b| b.deferred != l.deferred || b.deferred_secs != secs) {
            if let Err(e) = crate::sys::socket::set_defer_accept(s, secs) {
                failed(format!("setsockopt(TCP_DEFER_ACCEPT, {secs})"), e);
            }
        }
    }
}

/// `errno: text`, as nginx prints a system error.
fn errno_text(e: &io::Error) -> String {
    crate::sys::error::errno_text(e)
}

impl Listeners {
    /// Makes the socket set match `wanted` for `workers` workers, keeping
    /// every socket that can be kept (so a reload refuses no connection),
    /// binding new ones, and closing those no longer wanted (a unix-domain
    /// socket's file removed then, with nginx's `deleting socket` warning).
    pub fn update(&mut self, wanted: &[Listen], workers: usize) -> Result<(), BindError> {
        let mut next = HashMap::new();
        for l in wanted {
            let count = if l.reuseport { workers } else { 1 };
            // The old sockets are kept even when `reuseport` changes: the
            // running generation still listens on them, so a new socket on
            // the address could not bind. As nginx does, a socket that
            // gains `reuseport` gets SO_REUSEPORT set before the new ones
            // join it; one that loses it keeps the option, harmlessly.
            let old = self.by_addr.remove(&l.addr);
            let old_listen = old.as_ref().map(|o| o.listen.clone());
            let mut sockets = old.map_or_else(Vec::new, |o| o.sockets);
            let mut result = Ok(());
            if l.reuseport && old_listen.as_ref().is_some_and(|o| !o.reuseport) {
                result = sockets.iter().try_for_each(|s| {
                    s.set_reuse_port(true).map_err(|source| BindError {
                        call: "setsockopt(SO_REUSEPORT)",
                        addr: l.addr.clone(),
                        source,
                    })
                });
            }
            if let Some(before) = &old_listen {
                for s in &sockets {
                    tune(s, l, Some(before), &mut self.notes);
                }
            }
            while result.is_ok() && sockets.len() < count {
                match bind_one(l, l.reuseport, &mut self.notes) {
                    Ok(s) => sockets.push(s),
                    Err(e) => result = Err(e),
                }
            }
            if let Err(e) = result {
                // Put back what we took so a failed reload keeps serving.
                if let Some(listen) = old_listen {
                    self.by_addr
                        .insert(l.addr.clone(), AddrSockets { listen, sockets });
                } else if let (Some(p), false) = (l.addr.unix_path(), sockets.is_empty()) {
                    // A unix-domain socket bound by this attempt alone
                    // (`reuseport`, whose second bind() finds the file).
                    drop(sockets);
                    remove_file(p, &mut self.notes);
                }
                self.by_addr.extend(next);
                return Err(e);
            }
            sockets.truncate(count);
            next.insert(
                l.addr.clone(),
                AddrSockets {
                    listen: l.clone(),
                    sockets,
                },
            );
        }
        let dropped = std::mem::replace(&mut self.by_addr, next);
        for (addr, a) in dropped {
            drop(a);
            if let ListenAddr::Unix(p) = addr {
                // `ngx_init_cycle`: closing a listening socket the new
                // configuration does not name.
                self.notes.push(Note {
                    level: Level::Warn,
                    text: format!("deleting socket {}", p.display()),
                });
                remove_file(&p, &mut self.notes);
            }
        }
        Ok(())
    }

    /// Closes every socket, removing unix-domain sockets' files (nginx's
    /// master, at exit); what to log.
    pub fn close(self) -> Vec<Note> {
        let mut notes = self.notes;
        for (addr, a) in self.by_addr {
            drop(a);
            if let ListenAddr::Unix(p) = addr {
                remove_file(&p, &mut notes);
            }
        }
        notes
    }

    /// What happened to the sockets since last asked that the error log
    /// should say.
    pub fn take_notes(&mut self) -> Vec<Note> {
        std::mem::take(&mut self.notes)
    }

    /// The sockets worker `i` of `workers` accepts on: its own socket of each
    /// `reuseport` address and every shared socket, each with its address.
    pub fn for_worker(&self, i: usize) -> io::Result<Vec<(ListenAddr, Socket)>> {
        let mut out = Vec::new();
        for (addr, a) in &self.by_addr {
            let s = if a.listen.reuseport {
                &a.sockets[i % a.sockets.len()]
            } else {
                &a.sockets[0]
            };
            out.push((addr.clone(), s.try_clone()?));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{FileTypeExt, PermissionsExt};
    use std::path::PathBuf;

    use super::*;
    use crate::config::source::{Loc, Origin};

    fn listen(addr: &str) -> Listen {
        let addr = ListenAddr::parse_text(addr).expect("an address");
        Listen::new(
            addr,
            Loc {
                origin: Origin::Embedded,
                line: 1,
            },
        )
    }

    /// A fresh folder for socket files, removed at the end.
    struct Dir(PathBuf);

    impl Dir {
        fn new(name: &str) -> Dir {
            let p =
                std::env::temp_dir().join(format!("nowait-listen-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&p);
            std::fs::create_dir_all(&p).expect("a temp folder");
            Dir(p)
        }

        fn sock(&self, name: &str) -> String {
            format!("unix:{}", self.0.join(name).display())
        }
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// `getsockopt(IPPROTO_TCP, opt)` as an int.
    fn tcp_opt(s: &Socket, opt: libc::c_int) -> libc::c_int {
        crate::sys::socket::tcp_int_option(s, opt).expect("getsockopt")
    }

    #[test]
    fn listen_parameters_become_socket_options_and_follow_a_reload() {
        let mut l = listen("127.0.0.1:0");
        l.deferred = true;
        l.deferred_secs = 30;
        l.fastopen = Some(16);
        l.so_keepalive = Some(crate::config::model::SoKeepalive {
            on: true,
            idle: Some(600),
            interval: Some(10),
            count: Some(3),
        });
        let mut notes = Vec::new();
        let s = bind_one(&l, false, &mut notes).expect("bound");
        assert!(notes.is_empty(), "{notes:?}");
        assert!(s.keepalive().expect("SO_KEEPALIVE"));
        assert_eq!(s.tcp_keepalive_time().expect("TCP_KEEPIDLE").as_secs(), 600);
        assert_eq!(
            s.tcp_keepalive_interval().expect("TCP_KEEPINTVL").as_secs(),
            10
        );
        assert_eq!(s.tcp_keepalive_retries().expect("TCP_KEEPCNT"), 3);
        assert_eq!(tcp_opt(&s, libc::TCP_FASTOPEN), 16);
        // The kernel keeps the deferral as retransmissions: it reads back
        // as the first step at or above what was asked.
        assert!(tcp_opt(&s, libc::TCP_DEFER_ACCEPT) >= 30);
        // A reload without `deferred` takes it back from the kept socket;
        // the options it still has are left as they are.
        let mut after = l.clone();
        after.deferred = false;
        tune(&s, &after, Some(&l), &mut notes);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(tcp_opt(&s, libc::TCP_DEFER_ACCEPT), 0);
        assert_eq!(tcp_opt(&s, libc::TCP_FASTOPEN), 16);
        // `so_keepalive=off` turns the probes off.
        after.so_keepalive = Some(crate::config::model::SoKeepalive {
            on: false,
            idle: None,
            interval: None,
            count: None,
        });
        tune(&s, &after, Some(&l), &mut notes);
        assert!(!s.keepalive().expect("SO_KEEPALIVE"));
    }

    #[test]
    fn ipv6only_off_makes_a_dual_stack_socket() {
        let mut l = listen("[::1]:0");
        let mut notes = Vec::new();
        let bound = bind_one(&l, false, &mut notes);
        crate::require_or_skip!(
            bound.is_ok(),
            "no IPv6 loopback here ([::1] cannot be bound)"
        );
        let Ok(s) = bound else { return };
        assert!(s.only_v6().expect("IPV6_V6ONLY"));
        l.addr = ListenAddr::parse_text("[::]:0").expect("an address");
        l.ipv6only = false;
        let s = bind_one(&l, false, &mut notes).expect("bound");
        assert!(!s.only_v6().expect("IPV6_V6ONLY"));
    }

    #[test]
    fn a_unix_socket_is_never_served_by_a_wildcard() {
        let got = wanted(
            [
                "0.0.0.0:80",
                "127.0.0.1:80",
                "unix:/run/a.sock",
                "unix:/run/a.sock",
            ]
            .into_iter()
            .map(listen),
        );
        let addrs: Vec<String> = got.iter().map(|l| l.addr.to_string()).collect();
        assert_eq!(addrs, ["0.0.0.0:80", "unix:/run/a.sock"]);
    }

    #[test]
    fn a_unix_socket_file_is_made_0666_and_removed_by_a_reload_or_the_exit() {
        let dir = Dir::new("files");
        let (a, b) = (dir.sock("a.sock"), dir.sock("b.sock"));
        let mut l = Listeners::default();
        l.update(&[listen(&a), listen(&b)], 2).expect("bound");
        assert!(l.take_notes().is_empty());
        let path_a = dir.0.join("a.sock");
        let meta = std::fs::symlink_metadata(&path_a).expect("a.sock");
        assert!(meta.file_type().is_socket());
        assert_eq!(meta.permissions().mode() & 0o7777, 0o666);
        // Connectable: it listens.
        drop(std::os::unix::net::UnixStream::connect(&path_a).expect("connect"));
        // A reload without a.sock closes it and removes its file.
        l.update(&[listen(&b)], 2).expect("kept");
        assert!(!path_a.exists());
        let notes = l.take_notes();
        assert_eq!(notes.len(), 1);
        assert_eq!(notes[0].level, Level::Warn);
        assert_eq!(
            notes[0].text,
            format!("deleting socket {}", path_a.display())
        );
        // The exit removes the rest.
        assert!(l.close().is_empty());
        assert!(!dir.0.join("b.sock").exists());
    }

    #[test]
    fn an_existing_file_is_eaddrinuse_and_stays() {
        let dir = Dir::new("inuse");
        let path = dir.0.join("x.sock");
        std::fs::write(&path, b"not ours").expect("a file");
        let mut l = Listeners::default();
        let e = l.update(&[listen(&dir.sock("x.sock"))], 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "bind() to unix:{} failed (98: Address already in use)",
                path.display()
            )
        );
        assert_eq!(std::fs::read(&path).expect("kept"), b"not ours");
        assert!(l.close().is_empty());
        assert!(path.exists());
    }
}
