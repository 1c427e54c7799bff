//! Request-target parsing and path normalisation: never a panic, and a
//! normalised path is a fixed point (normalising it again changes nothing)
//! that starts with `/` and has no `.`/`..` segment.
#![no_main]

use libfuzzer_sys::fuzz_target;
use nowait::http::uri::{normalize_path, parse_target, percent_decode, validate_host};

fuzz_target!(|data: &[u8]| {
    if let Ok(u) = parse_target(data) {
        let _ = u.path_lossy();
        let _ = u.path_keeping_slashes();
    }
    let _ = percent_decode(data);
    let _ = validate_host(data);
    if let Ok(once) = normalize_path(data) {
        let twice = normalize_path(&once).expect("a normalised path normalises again");
        assert_eq!(once, twice, "normalising {data:?} twice changed it");
        for seg in once.split(|&c| c == b'/').skip(1) {
            assert!(seg != b"." && seg != b"..", "{data:?} -> {once:?}");
        }
    }
});
