//! The chunked request-body decoder on any bytes, fed whole and then split
//! at a point the input chooses: both ways decode the same body (or fail
//! alike), and the decoder never consumes more than it was given.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::http::chunked::ChunkedDecoder;

/// Decodes `parts` in order; the body, or `None` on an error.
fn decode(parts: &[&[u8]]) -> Option<(Vec<u8>, bool)> {
    let mut d = ChunkedDecoder::new(Some(1 << 20));
    let mut body = Vec::new();
    for p in parts {
        let used = d.feed(p, |b| body.extend_from_slice(b)).ok()?;
        assert!(used <= p.len());
        if d.is_done() {
            break;
        }
    }
    assert_eq!(d.body_len(), body.len() as u64);
    Some((body, d.is_done()))
}

fuzz_target!(|data: &[u8]| {
    let Some((&split, rest)) = data.split_first() else {
        return;
    };
    let at = usize::from(split).min(rest.len());
    let whole = decode(&[rest]);
    let halves = decode(&[&rest[..at], &rest[at..]]);
    assert_eq!(whole, halves);
});
