//! Random bytes and the machine's name: `getrandom()` and `gethostname()`.

use std::io;

/// Log name of [`getrandom`].
pub const GETRANDOM: &str = "getrandom()";

/// Fills `buf` from the kernel's random source without waiting
/// (`GRND_NONBLOCK`: fails with `EAGAIN` only before the pool is seeded at
/// boot, which a server never sees).
pub fn getrandom(buf: &mut [u8]) -> io::Result<()> {
    let mut filled = 0;
    while filled < buf.len() {
        let rest = &mut buf[filled..];
        // SAFETY: `rest` is a valid, writable buffer of `rest.len()` bytes for
        // the duration of the call; the kernel writes at most that many.
        let n = unsafe {
            libc::getrandom(
                rest.as_mut_ptr().cast::<libc::c_void>(),
                rest.len(),
                libc::GRND_NONBLOCK,
            )
        };
        match n {
            n if n > 0 => filled += n as usize,
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            _ => {
                let e = io::Error::last_os_error();
                if e.kind() != io::ErrorKind::Interrupted {
                    return Err(e);
                }
            }
        }
    }
    Ok(())
}

/// The machine's host name (`gethostname()`), as `$hostname` gives it.
pub fn hostname() -> io::Result<String> {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is writable for its full length; gethostname writes a
    // NUL-terminated name of at most `len` bytes.
    super::cvt(unsafe { libc::gethostname(buf.as_mut_ptr().cast::<libc::c_char>(), buf.len()) })?;
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_bytes_differ() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        getrandom(&mut a).unwrap();
        getrandom(&mut b).unwrap();
        assert_ne!(a, b);
    }

    #[test]
    fn a_host_has_a_name() {
        assert!(!hostname().unwrap().is_empty());
    }
}
