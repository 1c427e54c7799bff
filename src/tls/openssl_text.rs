//! OpenSSL 3.0's words for what goes wrong while nginx loads its TLS
//! files: the entries of OpenSSL's error queue that nginx's `ngx_ssl_error`
//! prints after a failed call (`error:80000002:system library::No such
//! file or directory:calling fopen(/x, r)`), so that nowait's `[emerg]`
//! lines read as nginx's. Each entry is its `ERR_error_string_n` text and
//! the data OpenSSL attached; [`super::ciphers::ssl_error_line`] joins them.

use std::io;

/// One entry of OpenSSL's error queue: its text and its data.
pub type Entry = (String, Option<String>);

/// `PEM_R_NO_START_LINE`.
pub const PEM_NO_START_LINE: &str = "error:0480006C:PEM routines::no start line";
/// `PEM_R_BAD_BASE64_DECODE`.
pub const PEM_BAD_BASE64: &str = "error:04800064:PEM routines::bad base64 decode";
/// `PEM_R_BAD_END_LINE`.
pub const PEM_BAD_END_LINE: &str = "error:04800066:PEM routines::bad end line";
/// `ERR_R_UNSUPPORTED` from the decoders: a PEM file that holds no key.
pub const DECODER_UNSUPPORTED: &str = "error:1E08010C:DECODER routines::unsupported";
/// The decoders' data for [`DECODER_UNSUPPORTED`].
pub const NO_DATA_TO_DECODE: &str = "No supported data to decode. Input type: PEM";
/// `X509_R_KEY_VALUES_MISMATCH`.
pub const KEY_VALUES_MISMATCH: &str =
    "error:05800074:x509 certificate routines::key values mismatch";
/// `SSL_R_DH_KEY_TOO_SMALL`: below the security level's 2048 bits.
pub const DH_KEY_TOO_SMALL: &str = "error:0A00018A:SSL routines::dh key too small";

/// `X509_R_SYSTEM_LIB`: what OpenSSL's X.509 file loaders
/// (`SSL_CTX_load_verify_locations`, `X509_LOOKUP_load_file`) add after a
/// file their BIO could not open.
pub const X509_SYSTEM_LIB: &str = "error:05880002:x509 certificate routines::system lib";

/// What `BIO_new_file(path, "r")` leaves in the queue when `fopen` fails
/// with `e`: the system error with the call, then the BIO's own ("no
/// such file" for a missing file, "system lib" for anything else).
pub fn fopen_failed(path: &std::path::Path, e: &io::Error) -> Vec<Entry> {
    fopen_failed_in(path, "r", e)
}

/// [`fopen_failed`] for a file opened in `mode` (`rb` for a DER file).
pub fn fopen_failed_in(path: &std::path::Path, mode: &str, e: &io::Error) -> Vec<Entry> {
    let errno = e.raw_os_error().unwrap_or(0);
    // std says "No such file or directory (os error 2)": OpenSSL prints
    // strerror's text alone.
    let text = e.to_string();
    let reason = text.split(" (os error").next().unwrap_or(&text);
    let bio = if errno == libc::ENOENT || errno == libc::ENXIO {
        "error:10000080:BIO routines::no such file"
    } else {
        "error:10080002:BIO routines::system lib"
    };
    vec![
        (
            format!(
                "error:{:08X}:system library::{reason}",
                0x8000_0000u32 | (errno as u32 & 0x7f_ffff)
            ),
            Some(format!("calling fopen({}, {mode})", path.display())),
        ),
        (bio.to_string(), None),
    ]
}

/// `PEM_read_bio_*` finding no section of the kind it wants: `expecting`
/// is the PEM name OpenSSL says it looked for (`TRUSTED CERTIFICATE`,
/// `DH PARAMETERS`).
pub fn no_start_line(expecting: &str) -> Vec<Entry> {
    vec![(
        PEM_NO_START_LINE.to_string(),
        Some(format!("Expecting: {expecting}")),
    )]
}

/// The queue as [`super::ciphers::ssl_error_line`] takes it.
pub fn line(message: &str, queue: &[Entry]) -> String {
    let q: Vec<(&str, Option<&str>)> = queue
        .iter()
        .map(|(t, d)| (t.as_str(), d.as_deref()))
        .collect();
    super::ciphers::ssl_error_line(message, &q)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn a_missing_file_reads_as_openssl_says_it() {
        let e = io::Error::from_raw_os_error(libc::ENOENT);
        assert_eq!(
            line(
                "BIO_new_file() failed",
                &fopen_failed(Path::new("/nope.crt"), &e)
            ),
            "BIO_new_file() failed (SSL: error:80000002:system library::No such file or directory:calling fopen(/nope.crt, r) error:10000080:BIO routines::no such file)"
        );
        let e = io::Error::from_raw_os_error(libc::EACCES);
        assert_eq!(
            line("x", &fopen_failed(Path::new("/s.pem"), &e)),
            "x (SSL: error:8000000D:system library::Permission denied:calling fopen(/s.pem, r) error:10080002:BIO routines::system lib)"
        );
    }
}
