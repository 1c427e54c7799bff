//! The memcached response readers on any bytes: the first line read as
//! the buffer grows a byte at a time, then the value and its trailer in
//! pieces; a head, an error or a step whose range lies in its piece, never
//! a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::upstream::wire::memcached::{Head, HeadReader, ValueReader};

fuzz_target!(|data: &[u8]| {
    let Some((&gzip_flag, data)) = data.split_first() else {
        return;
    };
    let mut head = HeadReader::new(b"k", u64::from(gzip_flag));
    for end in 0..=data.len() {
        match head.read(&data[..end]) {
            Ok(None) => continue,
            Ok(Some(Head::NotFound { used })) => assert!(used <= end),
            Ok(Some(Head::Value { used, length, .. })) => {
                assert!(used <= end);
                let mut value = ValueReader::new(length);
                for piece in data[used..].chunks(7) {
                    let step = value.feed(piece);
                    let _ = &piece[step.data];
                    if let Some(Err(e)) = step.end {
                        let _ = e.to_string();
                        break;
                    }
                }
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
        return;
    }
});
