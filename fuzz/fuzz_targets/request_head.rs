//! The request head parser (request line, header lines, the checks nginx
//! makes on them) on any bytes: it returns a head, "need more", or an
//! error, never panics; a parsed head never claims more bytes than it had.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::http::request::{error_framing, oversized_head_error, parse_head};

fuzz_target!(|data: &[u8]| {
    if let Ok(Some((head, used))) = parse_head(data) {
        assert!(used <= data.len(), "head of {used} bytes in {}", data.len());
        let _ = head.has_body();
        let _ = head.header("host");
    }
    let _ = oversized_head_error(data);
    let _ = error_framing(data);
});
