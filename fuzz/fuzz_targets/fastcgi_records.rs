//! The FastCGI record parser on any bytes, in pieces cut where the first
//! byte says: events whose ranges lie inside the piece, or an error, never
//! a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::upstream::wire::fastcgi::{Event, RecordParser};

fuzz_target!(|data: &[u8]| {
    let Some((&step, data)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let mut p = RecordParser::new();
    for piece in data.chunks(step) {
        let mut at = 0;
        while at < piece.len() {
            match p.feed(&piece[at..]) {
                Ok((n, ev)) => {
                    let rest = &piece[at..];
                    assert!(n <= rest.len());
                    if let Some(Event::Stdout(r) | Event::Stderr(r)) = ev {
                        assert!(r.end <= n && r.start <= r.end);
                        let _ = &rest[r];
                    }
                    at += n;
                }
                Err(e) => {
                    let _ = e.to_string();
                    return;
                }
            }
        }
    }
});
