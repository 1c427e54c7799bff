//! glibc's `memcpy()` on AMD processors: kept off `rep movsb`, by starting
//! the process again with the glibc tunable that says so.
//!
//! glibc copies blocks from 2–4 KiB up with `rep movsb` on a CPU that
//! advertises fast string moves (ERMS/FSRM). On the AMD EPYC this project
//! measures on (glibc 2.36, Debian 12), that instruction moves 16 KiB at
//! about 2 GB/s when the destination is not aligned as the source is,
//! against 20–40 GB/s for glibc's vector loop, whatever the alignment. TLS
//! hits that case on every record: rustls copies the plaintext into the
//! record after its 5- or 13-byte header before sealing it, so a 1 MB
//! response over TLS spent a quarter of the worker's CPU in that one copy,
//! and nowait served 0.74× nginx's requests per CPU-second (OpenSSL's
//! AES-GCM reads the plaintext where it lies). With the loop instead:
//! 1.00–1.05× (`docs/architecture.md`, "TLS", and `bench/tls.sh`).
//!
//! glibc reads its tunables once, when the program is loaded, so the only
//! way to set one for the process is to be loaded with it: [`reexec`]
//! runs first thing in `main`, and on an AMD CPU with fast string moves
//! whose environment does not already choose `x86_rep_movsb_threshold`
//! it executes the same binary again with the tunable added to
//! `GLIBC_TUNABLES`. An operator's own value is kept (set
//! `glibc.cpu.x86_rep_movsb_threshold=2048` for glibc's default). Elsewhere
//! — Intel, other C libraries, other architectures — nothing happens.

use std::ffi::OsString;

/// The environment variable glibc reads its tunables from.
const TUNABLES: &str = "GLIBC_TUNABLES";
/// The tunable, and the value set: larger than any copy nowait makes, so
/// glibc's vector loop (and its non-temporal stores past the cache's size)
/// do every copy.
const REP_MOVSB_THRESHOLD: &str = "glibc.cpu.x86_rep_movsb_threshold";
const NEVER: u64 = 1 << 30;

/// What the CPU says of itself, from `/proc/cpuinfo`.
#[derive(Debug, PartialEq, Eq)]
pub struct Cpu {
    /// `vendor_id`.
    pub vendor: String,
    /// Whether `flags` has `erms` or `fsrm` (glibc's reason for `rep movsb`).
    pub fast_strings: bool,
}

/// The first processor's vendor and flags in `/proc/cpuinfo`'s text.
pub fn parse_cpuinfo(text: &str) -> Option<Cpu> {
    let mut vendor = None;
    let mut fast_strings = false;
    for line in text.lines() {
        let Some((key, value)) = line.split_once(':') else {
            if vendor.is_some() && line.trim().is_empty() {
                break;
            }
            continue;
        };
        match key.trim() {
            "vendor_id" => vendor = Some(value.trim().to_string()),
            "flags" => {
                fast_strings = value.split_whitespace().any(|f| f == "erms" || f == "fsrm");
            }
            _ => {}
        }
    }
    vendor.map(|vendor| Cpu {
        vendor,
        fast_strings,
    })
}

/// The `GLIBC_TUNABLES` to start again with, given the CPU and the value
/// the process has (`None`: unset); `None` when nothing is to change.
pub fn tunables_for(cpu: &Cpu, current: Option<&str>) -> Option<String> {
    if cpu.vendor != "AuthenticAMD" || !cpu.fast_strings {
        return None;
    }
    let ours = format!("{REP_MOVSB_THRESHOLD}={NEVER}");
    match current {
        Some(c) if c.contains("x86_rep_movsb_threshold") => None,
        Some(c) if !c.is_empty() => Some(format!("{c}:{ours}")),
        _ => Some(ours),
    }
}

/// Whether this process's C library is glibc (the tunable means nothing to
/// another).
fn is_glibc() -> bool {
    cfg!(all(
        target_os = "linux",
        target_env = "gnu",
        target_arch = "x86_64"
    ))
}

/// Executes this program again with the tunable when [`tunables_for`]
/// says so; returns when it does not, or when the exec fails (the process
/// then goes on with glibc's own choice).
pub fn reexec() {
    if !is_glibc() {
        return;
    }
    let Ok(text) = std::fs::read_to_string("/proc/cpuinfo") else {
        return;
    };
    let Some(cpu) = parse_cpuinfo(&text) else {
        return;
    };
    let current = std::env::var(TUNABLES).ok();
    let Some(value) = tunables_for(&cpu, current.as_deref()) else {
        return;
    };
    let mut args = std::env::args_os();
    let argv0 = args.next().unwrap_or_else(|| OsString::from("nowait"));
    use std::os::unix::process::CommandExt;
    // The binary's own path (what /proc/self/exe links to), not the link:
    // the kernel names the process after the file executed, and `nowait`
    // must stay `nowait` to ps, pgrep and the logs' readers. A binary
    // replaced since it started cannot be found: then no exec.
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    // `exec` returns only on failure.
    let _ = std::process::Command::new(exe)
        .arg0(argv0)
        .args(args)
        .env(TUNABLES, value)
        .exec();
}

#[cfg(test)]
mod tests {
    use super::*;

    const AMD: &str = "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu sse2 erms fsrm avx2\n\nprocessor\t: 1\nvendor_id\t: Other\n";

    #[test]
    fn the_first_processor_is_read() {
        assert_eq!(
            parse_cpuinfo(AMD),
            Some(Cpu {
                vendor: "AuthenticAMD".into(),
                fast_strings: true
            })
        );
        let intel = "vendor_id : GenuineIntel\nflags : fpu sse2\n";
        assert_eq!(
            parse_cpuinfo(intel),
            Some(Cpu {
                vendor: "GenuineIntel".into(),
                fast_strings: false
            })
        );
        assert_eq!(parse_cpuinfo("processor : 0\n"), None);
    }

    #[test]
    fn only_amd_with_fast_strings_and_no_choice_of_its_own_is_tuned() {
        let amd = parse_cpuinfo(AMD).unwrap();
        let ours = format!("{REP_MOVSB_THRESHOLD}={NEVER}");
        assert_eq!(tunables_for(&amd, None), Some(ours.clone()));
        assert_eq!(tunables_for(&amd, Some("")), Some(ours.clone()));
        assert_eq!(
            tunables_for(&amd, Some("glibc.malloc.arena_max=2")),
            Some(format!("glibc.malloc.arena_max=2:{ours}"))
        );
        // The operator's value stands, and a process started again is not
        // started a third time.
        assert_eq!(
            tunables_for(&amd, Some("glibc.cpu.x86_rep_movsb_threshold=2048")),
            None
        );
        assert_eq!(tunables_for(&amd, Some(&ours)), None);
        let slow = Cpu {
            vendor: "AuthenticAMD".into(),
            fast_strings: false,
        };
        assert_eq!(tunables_for(&slow, None), None);
        let intel = Cpu {
            vendor: "GenuineIntel".into(),
            fast_strings: true,
        };
        assert_eq!(tunables_for(&intel, None), None);
    }
}
