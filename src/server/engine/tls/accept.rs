//! A client connection's TLS handshake, as nginx's
//! `ngx_http_ssl_handshake`: the first byte tells a handshake (a TLS
//! record, `0x16`, or SSLv2's high bit) from plain HTTP, which is served
//! to answer 497; the ClientHello's server name picks the server whose
//! certificate answers (`ngx_http_ssl_servername`); the whole handshake
//! must end within the address's `client_header_timeout`.
//!
//! The handshake's expensive steps — the ClientHello's answer, which signs
//! with the server's key, and the client's key exchange — run in the `ssl`
//! pool, never on the loop: a storm of new connections leaves the loop's
//! turns short. A full pool fails the handshake at once (counted, and
//! logged as a full thread pool is), as `aio threads` fails a request.

use std::io::{self, Read, Write};
use std::sync::Arc;
use std::time::Instant;

use rustls::ServerConnection;
use rustls::server::{Acceptor, ClientHello};
use tokio::net::TcpStream;

use crate::config::ssl_model::CertName;
use crate::io::client_stream::ClientStream;
use crate::io::tls_stream::TlsStream;
use crate::log::Level;

use super::info::TlsInfo;
use crate::server::core::site::Site;
use crate::server::engine::conn_info::ConnInfo;

/// How a handshake ended.
pub enum Accepted {
    /// TLS is up: the stream and what was negotiated.
    Tls(ClientStream, Arc<TlsInfo>),
    /// The client spoke plain HTTP to the TLS port: served to answer 497.
    Plain(ClientStream),
    /// The connection is over (closed, timed out, refused): logged.
    Closed,
}

/// The socket as rustls reads and writes it during the handshake.
struct Sock<'a>(&'a TcpStream);

/// The socket as the ClientHello is read from it: what is read is also
/// kept (up to [`crate::tls::hello::MAX_HELLO`] bytes), for what rustls
/// does not tell of the hello.
struct Tee<'a> {
    tcp: &'a TcpStream,
    copy: &'a mut Vec<u8>,
}

impl Read for Tee<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.tcp.try_read(buf)?;
        let room = crate::tls::hello::MAX_HELLO.saturating_sub(self.copy.len());
        self.copy.extend_from_slice(&buf[..n.min(room)]);
        Ok(n)
    }
}

impl Read for Sock<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.try_read(buf)
    }
}

impl Write for Sock<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.try_write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A fatal alert (RFC 8446 §6.2) in a TLS 1.2 record, as every version
/// reads one before the handshake.
const fn alert(description: u8) -> [u8; 7] {
    [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, description]
}
/// `unrecognized_name`: what `ssl_reject_handshake` answers.
const UNRECOGNIZED_NAME_ALERT: [u8; 7] = alert(112);
/// `internal_error`: the handshake pool was full, or a certificate named
/// with variables did not load.
const INTERNAL_ERROR_ALERT: [u8; 7] = alert(80);
/// `handshake_failure`.
const HANDSHAKE_FAILURE: u8 = 40;
/// `no_application_protocol` (RFC 7301 §3.2).
const NO_APPLICATION_PROTOCOL: u8 = 120;

/// A hello refused before it is answered: the alert, and what nginx
/// logs (OpenSSL's reason).
struct Refusal {
    alert: u8,
    reason: &'static str,
}

/// Whether OpenSSL would refuse `hello` under `server` before answering
/// it: an ALPN list with no protocol the server speaks (nginx's ALPN
/// callback fails the handshake), or no certificate that can sign with
/// a scheme the client accepts.
fn refuse(hello: &ClientHello<'_>, server: &super::ServerTls) -> Option<Refusal> {
    if let Some(mut protocols) = hello.alpn() {
        if !protocols.any(|p| server.config.alpn_protocols.iter().any(|ours| ours == p)) {
            return Some(Refusal {
                alert: NO_APPLICATION_PROTOCOL,
                reason: "error:0A0000EB:SSL routines::no application protocol",
            });
        }
    }
    if !server.can_sign(hello) {
        return Some(Refusal {
            alert: HANDSHAKE_FAILURE,
            reason: "error:0A000076:SSL routines::no suitable signature algorithm",
        });
    }
    None
}

/// Why a handshake failed, for the log.
enum Failure {
    /// The client closed before sending anything (nginx's "client closed
    /// connection", when its peek at the first byte reads none).
    Closed,
    /// The client closed or the socket failed (`info`, as nginx's
    /// "peer closed connection in SSL handshake").
    Gone(Option<io::Error>),
    /// No progress before the deadline.
    TimedOut,
    /// The client's bytes were not an acceptable handshake.
    Tls(rustls::Error),
    /// The handshake pool refused the work.
    Pool(String),
    /// `ssl_reject_handshake`.
    Rejected,
    /// A certificate named with variables did not load (`error`, as
    /// nginx's `cannot load certificate`), or a name had no value (the
    /// ACME order has no certificate yet: `None`, nothing more logged, as
    /// nginx's certificate callback fails when a variable fails).
    Certificate(Option<String>),
    /// A hello refused before it was answered, with OpenSSL's reason.
    Refused(&'static str),
}

/// Why the ClientHello's answer failed.
enum Start {
    /// rustls refused the hello, with the alert it answers it with.
    Tls(rustls::Error, Option<rustls::server::AcceptedAlert>),
    /// The certificates for it did not load.
    Certificate(String),
}

/// Runs the handshake of `tcp`, accepted on `info.socket_addr`, before
/// `deadline`.
pub async fn accept(
    tcp: TcpStream,
    info: &ConnInfo,
    site: &Arc<Site>,
    deadline: Instant,
) -> Accepted {
    use crate::metrics::tls::{Outcome, handshake as count};
    let started = crate::metrics::timed::now();
    let result = handshake(tcp, info, site, deadline).await;
    let took = started.elapsed();
    match result {
        Ok(a) => {
            let outcome = match &a {
                Accepted::Tls(_, t) if t.reused => Outcome::Resumed,
                Accepted::Tls(..) => Outcome::Full,
                Accepted::Plain(_) => Outcome::PlainHttp,
                Accepted::Closed => Outcome::Closed,
            };
            count(outcome, took);
            a
        }
        Err(f) => {
            let outcome = match &f {
                Failure::Closed | Failure::Gone(_) => Outcome::Closed,
                Failure::TimedOut => Outcome::TimedOut,
                Failure::Tls(_) | Failure::Certificate(_) | Failure::Refused(_) => {
                    Outcome::TlsError
                }
                Failure::Pool(_) => Outcome::PoolFull,
                Failure::Rejected => Outcome::Rejected,
            };
            count(outcome, took);
            log_failure(site, info, &f);
            Accepted::Closed
        }
    }
}

async fn handshake(
    tcp: TcpStream,
    info: &ConnInfo,
    site: &Arc<Site>,
    deadline: Instant,
) -> Result<Accepted, Failure> {
    // The first byte, as nginx peeks it: a TLS record or SSLv2's hello.
    let mut first = [0u8; 1];
    match tokio::time::timeout_at(deadline.into(), tcp.peek(&mut first)).await {
        Err(_) => return Err(Failure::TimedOut),
        Ok(Err(e)) => return Err(Failure::Gone(Some(e))),
        Ok(Ok(0)) => return Err(Failure::Closed),
        Ok(Ok(_)) => {}
    }
    if first[0] != 0x16 && first[0] & 0x80 == 0 {
        return Ok(Accepted::Plain(ClientStream::Tcp(tcp)));
    }
    let mut acceptor = Acceptor::default();
    let mut hello_bytes = Vec::new();
    let accepted = loop {
        let mut tee = Tee {
            tcp: &tcp,
            copy: &mut hello_bytes,
        };
        match acceptor.read_tls(&mut tee) {
            Ok(0) => return Err(Failure::Gone(None)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                match tokio::time::timeout_at(deadline.into(), tcp.readable()).await {
                    Err(_) => return Err(Failure::TimedOut),
                    Ok(Err(e)) => return Err(Failure::Gone(Some(e))),
                    Ok(Ok(())) => continue,
                }
            }
            Err(e) => return Err(Failure::Gone(Some(e))),
        }
        match acceptor.accept() {
            Ok(Some(a)) => break a,
            Ok(None) => continue,
            Err((e, mut alert)) => {
                let _ = alert.write_all(&mut Sock(&tcp));
                return Err(Failure::Tls(e));
            }
        }
    };
    let raw = crate::tls::hello::read(&hello_bytes);
    drop(hello_bytes);
    let hello = accepted.client_hello();
    let (suites, groups) = offered(&hello);
    // The name as sent picks the server (rustls drops an IP address,
    // which OpenSSL hands nginx), lower-cased as nginx's host rules say.
    let server_name = raw
        .server_name
        .clone()
        .or_else(|| hello.server_name().map(str::to_string));
    let index = site.tls_server(&info.socket_addr, &info.local, server_name.as_deref());
    let (tls, fetch) = match index {
        Some((_, Some(tls))) => {
            // A client that asks for the certificate's status may start
            // its staple's fetch (`ngx_ssl_certificate_status_callback`).
            let fetch = tls.fetch_for(&hello).filter(|_| raw.asks_status).cloned();
            (tls, fetch)
        }
        Some((true, None)) => {
            let _ = tcp.try_write(&UNRECOGNIZED_NAME_ALERT);
            return Err(Failure::Rejected);
        }
        Some((false, None)) | None => {
            let _ = tcp.try_write(&UNRECOGNIZED_NAME_ALERT);
            return Err(Failure::Rejected);
        }
    };
    // What OpenSSL refuses while it reads the hello, before it answers:
    // refused here too, so that the client gets the same alert alone (in
    // TLS 1.3 rustls would find it after its ServerHello).
    if let Some(refusal) = refuse(&hello, tls) {
        let _ = tcp.try_write(&alert(refusal.alert));
        return Err(Failure::Refused(refusal.reason));
    }
    let Some(pool) = site
        .pools
        .get(crate::config::finish_ssl::HANDSHAKE_POOL)
        .cloned()
    else {
        return Err(Failure::Pool("no \"ssl\" thread pool".to_string()));
    };
    // Under `ssl_prefer_server_ciphers`, OpenSSL takes the server's first
    // group the client has for a TLS 1.2 key exchange; rustls takes the
    // client's: a configuration with that group alone gives the server's.
    let config = match (raw.offers_tls13 && tls.speaks_tls13(), hello.named_groups()) {
        (false, Some(offered)) => tls.for_groups(offered),
        _ => tls.config.clone(),
    };
    let cas = tls.plan.client_cas.clone();
    // The id of this connection's session when OpenSSL would make one.
    let session_id = super::info::new_session_id();
    // Names with variables are evaluated now that the server name is
    // known (the ACME order's pair is taken from memory); their files are
    // read in the pool.
    let names = match tls.loaded {
        Some(_) => match names(site, info, tls, server_name.as_deref()) {
            Ok(names) => Some(names),
            Err(super::dynamic::NoValue) => {
                let _ = tcp.try_write(&INTERNAL_ERROR_ALERT);
                return Err(Failure::Certificate(None));
            }
        },
        None => None,
    };
    let (loaded, plan) = (tls.loaded.clone(), tls.plan.clone());
    // The ClientHello's answer signs with the server's key: in the pool.
    let started = pool.submit(move || {
        let _ = crate::tls::sessions::take_handshake_id();
        let certs = match (&loaded, &names) {
            (Some(loaded), Some(names)) => {
                let passwords = plan.passwords.as_ref().map(|p| p.as_slice());
                match loaded.load(names, &crate::tls::provider(), passwords) {
                    Ok(certs) => Some(certs),
                    Err(e) => return (Err(Start::Certificate(e)), None),
                }
            }
            _ => None,
        };
        let c = match certs {
            Some(certs) => {
                crate::tls::server::with_handshake_certs(certs, || accepted.into_connection(config))
            }
            None => accepted.into_connection(config),
        };
        // Records that came with the ClientHello (early data) are
        // decrypted now, before the client is waited for.
        let mut early = Vec::new();
        let mut verdict = None;
        // The alert rustls answers the hello with (no protocol in common,
        // no suite, an ALPN list without http/1.1 …) goes to the client,
        // as OpenSSL sends its alert.
        let c = c
            .map_err(|(e, alert)| Start::Tls(e, Some(alert)))
            .and_then(|mut c| {
                c.process_new_packets().map_err(|e| Start::Tls(e, None))?;
                take_early(&mut c, &mut early);
                if !early.is_empty() {
                    // Served before the handshake ends: a resumed session's
                    // certificate is judged now.
                    verdict = judge(plan.client_cas.as_deref(), &c);
                }
                Ok(c)
            });
        let id = crate::tls::sessions::take_handshake_id();
        (c.map(|c| (c, early, verdict)), id)
    });
    let mut stored_id;
    let mut verdict;
    let mut early;
    let mut conn = match started {
        Ok(done) => match done.await {
            Ok((Ok((c, e, v)), id)) => {
                stored_id = id;
                early = e;
                verdict = v;
                c
            }
            Ok((Err(Start::Tls(e, alert)), _)) => {
                if let Some(mut alert) = alert {
                    let _ = alert.write_all(&mut Sock(&tcp));
                }
                return Err(Failure::Tls(e));
            }
            Ok((Err(Start::Certificate(e)), _)) => {
                let _ = tcp.try_write(&INTERNAL_ERROR_ALERT);
                return Err(Failure::Certificate(Some(e)));
            }
            Err(e) => return Err(Failure::Pool(e.to_string())),
        },
        Err(e) => {
            let _ = tcp.try_write(&INTERNAL_ERROR_ALERT);
            return Err(Failure::Pool(e.to_string()));
        }
    };
    // As nginx, once this handshake has its certificate (and the staple
    // it had): it never waits for the fetch, nor gets what it brings.
    if let Some(fetch) = &fetch {
        super::stapling::kick(fetch, &site.error_log);
    }
    loop {
        send_all(&tcp, &mut conn, deadline).await?;
        // With early data the request is served before the client's
        // Finished, as nginx does (the application decides on replays:
        // `$ssl_early_data`); the stream takes the Finished as it comes.
        if !conn.is_handshaking() || !early.is_empty() {
            break;
        }
        match conn.read_tls(&mut Sock(&tcp)) {
            Ok(0) => return Err(Failure::Gone(None)),
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                match tokio::time::timeout_at(deadline.into(), tcp.readable()).await {
                    Err(_) => return Err(Failure::TimedOut),
                    Ok(Err(e)) => return Err(Failure::Gone(Some(e))),
                    Ok(Ok(())) => continue,
                }
            }
            Err(e) => return Err(Failure::Gone(Some(e))),
        }
        // The client's key exchange, its certificate and Finished, and
        // the verification of its certificate: off the loop too.
        let cas = cas.clone();
        let step = pool.submit(move || {
            let r = conn.process_new_packets().map(|_| ());
            let mut early = Vec::new();
            take_early(&mut conn, &mut early);
            let ready = !conn.is_handshaking() || !early.is_empty();
            let verdict = match r.is_ok() && ready {
                true => judge(cas.as_deref(), &conn),
                false => None,
            };
            let id = crate::tls::sessions::take_handshake_id();
            (conn, r, verdict, id, early)
        });
        let (c, r, v, id, more) = match step {
            Ok(done) => done.await.map_err(|e| Failure::Pool(e.to_string()))?,
            Err(e) => {
                let _ = tcp.try_write(&INTERNAL_ERROR_ALERT);
                return Err(Failure::Pool(e.to_string()));
            }
        };
        conn = c;
        early.extend(more);
        verdict = verdict.or(v);
        stored_id = stored_id.or(id);
        if let Err(e) = r {
            let _ = send_now(&tcp, &mut conn);
            return Err(Failure::Tls(e));
        }
    }
    // `ssl_ocsp`: a verified certificate is asked about before the first
    // request is read (`ngx_ssl_ocsp_validate`), resumed sessions' too.
    let ocsp = match (&tls.ocsp, verdict) {
        (Some(o), Some(crate::tls::client_verify::Verdict::Success)) => {
            let sent: Vec<_> = conn
                .peer_certificates()
                .unwrap_or_default()
                .iter()
                .map(|c| c.clone().into_owned())
                .collect();
            let log = connection_log(site, info);
            let tail = handshake_tail(info);
            Some(super::client_ocsp::validate(o, &sent, log, info.conn_no, &tail).await)
        }
        _ => None,
    };
    let session = super::info::Session {
        id: session_id,
        offered: raw.session_id.clone(),
        stored: stored_id,
        ticket: raw.wants_ticket && tls.config.ticketer.enabled(),
        tls12_ids: tls.tls12_ids,
    };
    let mut negotiated = TlsInfo::of(&conn, suites, groups, verdict, &session);
    if let Some(c) = negotiated.client.as_mut() {
        c.ocsp = ocsp;
    }
    // `$ssl_server_name` is the name as the client sent it.
    negotiated.server_name = server_name;
    let info = Arc::new(negotiated);
    Ok(Accepted::Tls(
        ClientStream::Tls(Box::new(TlsStream::with_early(tcp, conn, early))),
        info,
    ))
}

/// The verdict on the client's certificate, when the server verifies
/// them and the client sent one (or resumed a session that had one).
fn judge(
    cas: Option<&crate::tls::client_verify::ClientCas>,
    conn: &ServerConnection,
) -> Option<crate::tls::client_verify::Verdict> {
    let chain = conn.peer_certificates().filter(|c| !c.is_empty())?;
    Some(cas?.verify(chain, rustls::pki_types::UnixTime::now()))
}

/// Moves the early data rustls decrypted into `into`.
fn take_early(conn: &mut ServerConnection, into: &mut Vec<u8>) {
    if let Some(mut ed) = conn.early_data() {
        let _ = ed.read_to_end(into);
    }
}

/// The names of the server's certificates evaluated for this handshake,
/// as nginx evaluates them in `ngx_http_ssl_certificate`: with a request
/// made for the connection (no header yet), `$ssl_server_name` the name
/// the ClientHello sent. nginx-acme's pair (`$acme_certificate`,
/// `$acme_certificate_key`) is the certificate the server's order holds
/// now, parsed when it was issued; `NoValue` while it holds none.
fn names(
    site: &Site,
    info: &ConnInfo,
    tls: &super::ServerTls,
    sni: Option<&str>,
) -> Result<super::dynamic::Names, super::dynamic::NoValue> {
    let empty = || Ok(Vec::new());
    let Some(server) = site.http().and_then(|h| h.servers.get(tls.index)) else {
        return empty();
    };
    let Ok(Some((head, _))) = crate::http::request::parse_head(b"GET / HTTP/1.0\r\n\r\n") else {
        return empty();
    };
    let acme = tls.plan.acme.as_deref();
    let held = |c: &CertName, k: &CertName| {
        let id = acme.filter(|_| c.is_acme_pair(k))?;
        Some(
            site.shared
                .acme
                .current(id)
                .map(|cur| cur.certified.clone()),
        )
    };
    let mut conn = info.clone();
    conn.tls = Some(Arc::new(TlsInfo {
        server_name: sni.map(str::to_string),
        ..TlsInfo::default()
    }));
    let r =
        crate::server::core::request::Req::new(site, &head, server, &conn, 0, Instant::now(), 0);
    super::dynamic::names(
        &tls.plan.dynamic_certs,
        site.config.conf_prefix(),
        held,
        |n| r.expand(&n.name),
    )
}

/// What the ClientHello offered: cipher suites and groups (kept for
/// `$ssl_ciphers`, `$ssl_curves`).
fn offered(hello: &ClientHello<'_>) -> (Vec<u16>, Vec<u16>) {
    (
        hello
            .cipher_suites()
            .iter()
            .map(|&c| u16::from(c))
            .collect(),
        hello
            .named_groups()
            .map(|g| g.iter().map(|&g| u16::from(g)).collect())
            .unwrap_or_default(),
    )
}

/// Sends what the connection holds, as much as the socket takes now.
fn send_now(tcp: &TcpStream, conn: &mut ServerConnection) -> io::Result<()> {
    while conn.wants_write() {
        conn.write_tls(&mut Sock(tcp))?;
    }
    Ok(())
}

/// Sends everything the connection holds before `deadline`.
async fn send_all(
    tcp: &TcpStream,
    conn: &mut ServerConnection,
    deadline: Instant,
) -> Result<(), Failure> {
    loop {
        match send_now(tcp, conn) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                match tokio::time::timeout_at(deadline.into(), tcp.writable()).await {
                    Err(_) => return Err(Failure::TimedOut),
                    Ok(Err(e)) => return Err(Failure::Gone(Some(e))),
                    Ok(Ok(())) => {}
                }
            }
            Err(e) => return Err(Failure::Gone(Some(e))),
        }
    }
}

/// The connection's log: its address's default server's, as nginx's
/// `ngx_http_init_connection` sets it.
fn connection_log<'s>(site: &'s Site, info: &ConnInfo) -> &'s crate::log::ErrorLog {
    site.server(&info.socket_addr, &info.local, None)
        .map_or(&site.error_log, |s| &s.conf.error_log.log)
}

/// What the connection's messages end with while it handshakes.
fn handshake_tail(info: &ConnInfo) -> String {
    format!(
        " while SSL handshaking, client: {}, server: {}",
        info.peer, info.socket_addr
    )
}

/// Logs a failed handshake in nginx's words and level: `info` for what a
/// client did (nginx logs handshake errors a client causes at `info`),
/// `error` for a full pool.
fn log_failure(site: &Site, info: &ConnInfo, f: &Failure) {
    let log = connection_log(site, info);
    let tail = handshake_tail(info);
    let (level, text) = match f {
        Failure::Closed => (Level::Info, "client closed connection".to_string()),
        Failure::Gone(None) => (
            Level::Info,
            "peer closed connection in SSL handshake".to_string(),
        ),
        Failure::Gone(Some(e)) => (
            Level::Info,
            format!(
                "SSL_do_handshake() failed ({})",
                crate::sys::error::errno_text(e)
            ),
        ),
        Failure::TimedOut => (
            Level::Info,
            "client timed out (110: Connection timed out)".to_string(),
        ),
        Failure::Tls(e) => (Level::Info, format!("SSL_do_handshake() failed (SSL: {e})")),
        Failure::Pool(e) => (Level::Error, e.clone()),
        Failure::Certificate(e) => {
            if let Some(e) = e {
                log.log(Level::Error, Some(info.conn_no), format_args!("{e}{tail}"));
            }
            (
                Level::Info,
                "SSL_do_handshake() failed (SSL: error:0A000179:SSL routines::cert cb error)"
                    .to_string(),
            )
        }
        Failure::Rejected => (Level::Info, "handshake rejected".to_string()),
        Failure::Refused(why) => (
            Level::Info,
            format!("SSL_do_handshake() failed (SSL: {why})"),
        ),
    };
    log.log(level, Some(info.conn_no), format_args!("{text}{tail}"));
}
