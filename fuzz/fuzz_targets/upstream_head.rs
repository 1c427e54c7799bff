//! The upstream response head parser (status line, header fields) on any
//! bytes: a head, "need more", or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::upstream::head::parse_head;

fuzz_target!(|data: &[u8]| {
    if let Err(e) = parse_head(data) {
        let _ = e.message();
    }
});
