//! The last minutes of the status page: one [`Second`] per second, kept in
//! a bounded ring the process owns (so a reload keeps the picture), and
//! written as the JSON the page's charts fetch.
//!
//! This module holds plain numbers only; `server::modules::status_ring` takes them
//! from the workers, pools and cache zones once a second and pushes them
//! here. Nothing here reads a clock or a lock of anyone else.

use std::collections::VecDeque;
use std::fmt::Write;

/// How many seconds the ring keeps (five minutes).
pub const RING_SECONDS: usize = 300;

/// One worker's loop in one second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WorkerSecond {
    /// The worker's number.
    pub id: usize,
    /// 99th percentile of the loop turns of the second, µs (0: none).
    pub turn_p99_us: u64,
    /// The longest loop turn of the second, µs.
    pub turn_max_us: u64,
}

/// One pool in one second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolSecond {
    /// The pool's name.
    pub name: String,
    /// Tasks waiting in its queue when the second ended.
    pub waiting: u64,
    /// 99th percentile of the queue waits of tasks started in the second, µs.
    pub wait_p99_us: u64,
}

/// One cache zone in one second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ZoneSecond {
    /// The `keys_zone` name.
    pub zone: String,
    /// HITs over cached requests of the second; `None` without requests.
    pub hit_ratio: Option<f64>,
}

/// Everything the page draws about one second.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Second {
    /// When the second ended (Unix time, seconds).
    pub t: u64,
    /// Requests started in the second.
    pub requests: u64,
    /// Time to first byte of the second, 50th and 99th percentile, µs.
    pub ttfb_p50_us: u64,
    /// See [`Second::ttfb_p50_us`].
    pub ttfb_p99_us: u64,
    /// Per worker.
    pub workers: Vec<WorkerSecond>,
    /// Per pool.
    pub pools: Vec<PoolSecond>,
    /// Fast-path hits over attempts in the second; `None` without attempts.
    pub fast_hit_ratio: Option<f64>,
    /// Per cache zone.
    pub zones: Vec<ZoneSecond>,
    /// TLS handshakes that succeeded in the second.
    pub tls_handshakes: u64,
    /// Of them, those that resumed a session.
    pub tls_resumed: u64,
    /// TLS handshakes that failed in the second (any reason).
    pub tls_failed: u64,
}

/// The ring: the newest [`RING_SECONDS`] seconds, oldest first.
#[derive(Debug, Default)]
pub struct Ring {
    seconds: VecDeque<Second>,
}

impl Ring {
    /// An empty ring.
    pub fn new() -> Ring {
        Ring {
            seconds: VecDeque::with_capacity(RING_SECONDS),
        }
    }

    /// Appends a second, dropping the oldest when full.
    pub fn push(&mut self, s: Second) {
        if self.seconds.len() == RING_SECONDS {
            self.seconds.pop_front();
        }
        self.seconds.push_back(s);
    }

    /// How many seconds it holds.
    pub fn len(&self) -> usize {
        self.seconds.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.seconds.is_empty()
    }

    /// The seconds after `since` (Unix seconds; 0 for all) as JSON:
    /// `{"seconds":[{"t":…,"requests":…,…},…]}`.
    pub fn json(&self, since: u64) -> String {
        let mut out = String::with_capacity(256 * self.seconds.len() + 16);
        out.push_str("{\"seconds\":[");
        let mut first = true;
        for s in self.seconds.iter().filter(|s| s.t > since) {
            if !first {
                out.push(',');
            }
            first = false;
            second_json(&mut out, s);
        }
        out.push_str("]}");
        out
    }
}

fn ratio(r: Option<f64>) -> String {
    match r {
        Some(v) if v.is_finite() => format!("{v:.4}"),
        _ => "null".to_string(),
    }
}

fn second_json(out: &mut String, s: &Second) {
    let _ = write!(
        out,
        "{{\"t\":{},\"requests\":{},\"ttfb_p50_us\":{},\"ttfb_p99_us\":{},\"fast_hit_ratio\":{},\"tls_handshakes\":{},\"tls_resumed\":{},\"tls_failed\":{},\"workers\":[",
        s.t,
        s.requests,
        s.ttfb_p50_us,
        s.ttfb_p99_us,
        ratio(s.fast_hit_ratio),
        s.tls_handshakes,
        s.tls_resumed,
        s.tls_failed
    );
    for (i, w) in s.workers.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let _ = write!(
            out,
            "{sep}{{\"id\":{},\"turn_p99_us\":{},\"turn_max_us\":{}}}",
            w.id, w.turn_p99_us, w.turn_max_us
        );
    }
    out.push_str("],\"pools\":[");
    for (i, p) in s.pools.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let _ = write!(
            out,
            "{sep}{{\"name\":{},\"waiting\":{},\"wait_p99_us\":{}}}",
            string(&p.name),
            p.waiting,
            p.wait_p99_us
        );
    }
    out.push_str("],\"zones\":[");
    for (i, z) in s.zones.iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        let _ = write!(
            out,
            "{sep}{{\"zone\":{},\"hit_ratio\":{}}}",
            string(&z.zone),
            ratio(z.hit_ratio)
        );
    }
    out.push_str("]}");
}

/// A JSON string literal.
fn string(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn second(t: u64) -> Second {
        Second {
            t,
            requests: 5,
            ttfb_p50_us: 40,
            ttfb_p99_us: 900,
            workers: vec![WorkerSecond {
                id: 1,
                turn_p99_us: 12,
                turn_max_us: 300,
            }],
            pools: vec![PoolSecond {
                name: "disk \"a\"".into(),
                waiting: 2,
                wait_p99_us: 50,
            }],
            fast_hit_ratio: Some(0.5),
            zones: vec![ZoneSecond {
                zone: "z".into(),
                hit_ratio: None,
            }],
            tls_handshakes: 7,
            tls_resumed: 3,
            tls_failed: 1,
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_seconds() {
        let mut r = Ring::new();
        for t in 0..(RING_SECONDS as u64 + 10) {
            r.push(second(t));
        }
        assert_eq!(r.len(), RING_SECONDS);
        let j = r.json(0);
        assert!(j.starts_with("{\"seconds\":[{\"t\":10,"), "{}", &j[..40]);
    }

    #[test]
    fn json_holds_every_figure_and_only_newer_seconds() {
        let mut r = Ring::new();
        r.push(second(1));
        r.push(second(2));
        let j = r.json(1);
        assert_eq!(
            j,
            "{\"seconds\":[{\"t\":2,\"requests\":5,\"ttfb_p50_us\":40,\"ttfb_p99_us\":900,\
             \"fast_hit_ratio\":0.5000,\"tls_handshakes\":7,\"tls_resumed\":3,\"tls_failed\":1,\"workers\":[{\"id\":1,\"turn_p99_us\":12,\"turn_max_us\":300}],\
             \"pools\":[{\"name\":\"disk \\\"a\\\"\",\"waiting\":2,\"wait_p99_us\":50}],\
             \"zones\":[{\"zone\":\"z\",\"hit_ratio\":null}]}]}"
        );
        assert_eq!(Ring::new().json(0), "{\"seconds\":[]}");
    }
}
