//! The cache file header: `from_bytes` and `decode` on any file contents
//! never panic (a corrupt or foreign file is an error, not a crash), and a
//! header that reads back writes out to the same bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::cache::format::{EntryHeader, HEADER_SIZE, decode};
use nowait::cache::key::CacheKey;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = EntryHeader::from_bytes(data) {
        let again = EntryHeader::from_bytes(&h.to_bytes()).expect("written header reads back");
        assert_eq!(again.to_bytes(), h.to_bytes());
        assert!(data.len() >= HEADER_SIZE);
    }
    let key = CacheKey::new(b"http://example.com/a");
    for max in [0, 256, 4096, usize::MAX] {
        if let Ok(e) = decode(data, &key, max) {
            assert!(e.body_start() <= data.len().max(max));
        }
    }
});
