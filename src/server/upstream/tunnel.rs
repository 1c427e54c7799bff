//! An upgraded connection (`101 Switching Protocols`, WebSocket): after the
//! 101 head, bytes go both ways between the client and the upstream until
//! either side closes, as nginx's `ngx_http_upstream_process_upgraded`.
//!
//! Each direction has one buffer of `proxy_buffer_size`: a side that does
//! not read holds the other side back, never more memory. An upstream
//! silent for `proxy_read_timeout` ends the tunnel (`upstream timed out`),
//! as does a client that takes no bytes for `send_timeout` (`client timed
//! out`).
//!
//! Either side may be TLS: what a write encrypted and the socket did not
//! take yet is sent as soon as the socket takes it, even when nothing more
//! comes to write.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::body::{Upgrade, UpgradeError};
use crate::io::client_stream::ClientStream;
use crate::upstream::conn::Conn;

/// The upstream side of an upgraded connection.
pub struct Tunnel {
    /// The upstream connection.
    pub conn: Conn,
    /// Bytes the upstream sent after its 101 head.
    pub leftover: Vec<u8>,
    /// `proxy_buffer_size`.
    pub buffer: usize,
    /// `proxy_read_timeout`.
    pub read_timeout: Duration,
    /// `proxy_send_timeout`.
    pub send_timeout: Duration,
    /// `send_timeout` (to the client).
    pub client_timeout: Duration,
}

/// One direction's buffer: bytes read and not yet written.
struct Half {
    buf: Vec<u8>,
    pos: usize,
    /// The source closed: shut the other side's writing once drained.
    eof: bool,
}

impl Half {
    fn pending(&self) -> bool {
        self.pos < self.buf.len()
    }
}

impl Upgrade for Tunnel {
    fn run<'a>(
        self: Box<Self>,
        client: &'a ClientStream,
        client_leftover: Vec<u8>,
        sent: &'a std::cell::Cell<u64>,
    ) -> Pin<Box<dyn Future<Output = Result<(), UpgradeError>> + 'a>> {
        Box::pin(async move { run(*self, client, client_leftover, sent).await })
    }
}

async fn run(
    mut t: Tunnel,
    client: &ClientStream,
    client_leftover: Vec<u8>,
    sent: &std::cell::Cell<u64>,
) -> Result<(), UpgradeError> {
    let size = t.buffer.max(1024);
    let mut down = Half {
        buf: std::mem::take(&mut t.leftover),
        pos: 0,
        eof: false,
    };
    let mut up = Half {
        buf: client_leftover,
        pos: 0,
        eof: false,
    };
    let conn = &t.conn;
    let mut upstream_quiet = Box::pin(tokio::time::sleep(t.read_timeout));
    loop {
        // Write what each side takes now.
        while down.pending() {
            match client.try_write(&down.buf[down.pos..]) {
                Ok(n) => {
                    down.pos += n;
                    sent.set(sent.get() + n as u64);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return Ok(()),
            }
        }
        while up.pending() {
            match conn.try_write_vectored(&[std::io::IoSlice::new(&up.buf[up.pos..])]) {
                Ok(n) => up.pos += n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(_) => return Ok(()),
            }
        }
        if !down.pending() && down.eof || !up.pending() && up.eof {
            // One side closed and everything it sent was passed on.
            return drained(&t, client, conn).await;
        }
        // Read into an empty buffer only: one buffer per direction.
        if !down.pending() && !down.eof {
            down.buf.clear();
            down.pos = 0;
            down.buf.reserve(size);
            match conn.try_read_buf(&mut down.buf) {
                Ok(0) => down.eof = true,
                Ok(_) => {
                    upstream_quiet
                        .as_mut()
                        .reset(tokio::time::Instant::now() + t.read_timeout);
                    continue;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return Ok(()),
            }
        }
        if !up.pending() && !up.eof {
            up.buf.clear();
            up.pos = 0;
            up.buf.reserve(size);
            match client.try_read_buf(&mut up.buf) {
                Ok(0) => up.eof = true,
                Ok(_) => continue,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return Ok(()),
            }
        }
        if down.eof && !down.pending() || up.eof && !up.pending() {
            return drained(&t, client, conn).await;
        }
        // TLS output held back (the socket took part of a record) is a
        // write still pending.
        let to_client = down.pending() || client.holds_output();
        let to_upstream = up.pending() || conn.holds_output();
        tokio::select! {
            r = conn.readable(), if !down.pending() => r.map_err(|_| UpgradeError::Closed)?,
            r = client.readable(), if !up.pending() => r.map_err(|_| UpgradeError::Closed)?,
            r = tokio::time::timeout(t.client_timeout, client.writable()), if to_client => {
                r.map_err(|_| UpgradeError::ClientTimedOut)?.map_err(|_| UpgradeError::Closed)?
            }
            r = tokio::time::timeout(t.send_timeout, conn.writable()), if to_upstream => {
                r.map_err(|_| UpgradeError::UpstreamTimedOut)?.map_err(|_| UpgradeError::Closed)?
            }
            _ = upstream_quiet.as_mut() => return Err(UpgradeError::UpstreamTimedOut),
        }
    }
}

/// The tunnel ends: what TLS still holds for either side goes first
/// (each wait bounded by that side's timeout; a side that takes nothing
/// more loses it, as a closed plain socket would).
async fn drained(t: &Tunnel, client: &ClientStream, conn: &Conn) -> Result<(), UpgradeError> {
    let _ = tokio::time::timeout(t.client_timeout, client.flush()).await;
    let _ = conn.flush(t.send_timeout).await;
    Ok(())
}
