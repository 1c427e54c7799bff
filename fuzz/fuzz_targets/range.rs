//! The `Range` header parser: every satisfiable range lies inside the file
//! and is not empty, for any header and length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::http::range::{RangeSpec, parse_range_limited};

fuzz_target!(|data: &[u8]| {
    if data.len() < 8 {
        return;
    }
    let (len, header) = data.split_at(8);
    let mut b = [0u8; 8];
    b.copy_from_slice(len);
    // Lengths near both ends of u64 and small ones alike.
    let len = u64::from_le_bytes(b) >> (b[0] % 64);
    let Ok(header) = std::str::from_utf8(header) else {
        return;
    };
    for max in [None, Some(1), Some(4)] {
        if let RangeSpec::Satisfiable(ranges) = parse_range_limited(header, len, max) {
            assert!(!ranges.is_empty());
            for r in &ranges {
                assert!(!r.is_empty(), "{header:?} {len}: empty {r:?}");
                assert!(r.start < r.end && r.end <= len, "{header:?} {len}: {r:?}");
                let _ = r.content_range(len);
            }
        }
    }
});
