//! The cache file, byte for byte as nginx 1.22.1 writes and reads it
//! (`ngx_http_file_cache_header_t` in `ngx_http_cache.h`,
//! `ngx_http_file_cache_set_header`, `ngx_http_file_cache_read`,
//! `ngx_http_file_cache_update_header`), so that nowait and nginx can share
//! a cache directory.
//!
//! Owns: the header's layout, encoding it with the `KEY:` line, the checks
//! nginx makes when it reads a file (with its log words), and the in-place
//! header rewrite after a `304` revalidation.
//! Must not: open, read or write files (the caller does, off the event
//! loop), decide freshness (the policy does) or look at the zone.
//!
//! A file is:
//!
//! ```text
//! 0                 HEADER_SIZE (336)     header_start              body_start
//! | C struct, raw   | "\nKEY: " key "\n"  | upstream status line    | body...
//! | (x86-64 layout) |                     | + headers as received   |
//! ```
//!
//! The struct is written from memory as it is, so it has the C compiler's
//! layout on x86-64 Linux (LP64, little-endian): 8-byte `ngx_uint_t` and
//! `time_t`, padding to 8 at the end (see [`HEADER_SIZE`] and the offsets
//! below). nowait writes little-endian explicitly: files move between
//! little-endian 64-bit machines, as nginx's do.
//!
//! How nginx fills a file, and why `body_start` is known before the body
//! is written: it reserves [`header_start`] bytes at the start of the
//! buffer it reads the upstream's head into (`proxy_buffer_size`), reads
//! the head after them, and when the head is parsed writes the struct and
//! the `KEY:` line into the reserved room; `body_start` is where the head
//! ended in that buffer. The caller does the same with [`encode`]: its
//! output is exactly `header_start` bytes long, and the head follows.

use std::fmt;

use crate::log::level::Level;

use super::key::{CacheKey, KEY_LEN};

/// The header version nginx 1.22 writes and accepts (`NGX_HTTP_CACHE_VERSION`).
pub const VERSION: u64 = 5;
/// `sizeof(ngx_http_file_cache_header_t)` on x86-64.
pub const HEADER_SIZE: usize = 336;
/// Room for the `ETag` value (`NGX_HTTP_CACHE_ETAG_LEN`); a longer one is
/// not stored.
pub const ETAG_LEN: usize = 128;
/// Room for the `Vary` value (`NGX_HTTP_CACHE_VARY_LEN`); a response with a
/// longer one is not cached.
pub const VARY_LEN: usize = 128;
/// What comes between the struct and the key (`ngx_http_file_cache_key`).
pub const KEY_PREFIX: &[u8] = b"\nKEY: ";
/// Room nginx wants in `proxy_buffer_size` beyond [`header_start`] for the
/// upstream's head (`ngx_http_upstream_cache`).
pub const HEAD_ROOM: usize = 256;
/// nginx rounds the `proxy_buffer_size` it suggests up to this.
const SUGGESTION_ALIGN: usize = 1024;

// Field offsets in the struct, as gcc lays it out on x86-64.
const OFF_VERSION: usize = 0;
const OFF_VALID_SEC: usize = 8;
const OFF_UPDATING_SEC: usize = 16;
const OFF_ERROR_SEC: usize = 24;
const OFF_LAST_MODIFIED: usize = 32;
const OFF_DATE: usize = 40;
const OFF_CRC32: usize = 48;
const OFF_VALID_MSEC: usize = 52;
const OFF_HEADER_START: usize = 54;
const OFF_BODY_START: usize = 56;
const OFF_ETAG_LEN: usize = 58;
const OFF_ETAG: usize = 59;
const OFF_VARY_LEN: usize = 187;
const OFF_VARY: usize = 188;
const OFF_VARIANT: usize = 316;
/// Where the 4 bytes of tail padding start (zero in nginx's files: it
/// clears the struct before filling it).
const OFF_PADDING: usize = 332;
// The layout is contiguous up to the padding, which rounds it to 8.
const _: () = assert!(OFF_VARIANT + KEY_LEN == OFF_PADDING);
const _: () = assert!(OFF_PADDING.next_multiple_of(8) == HEADER_SIZE);

/// The fields of `ngx_http_file_cache_header_t`. Times are Unix seconds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryHeader {
    /// Format version; nginx 1.22 uses only files of [`VERSION`].
    pub version: u64,
    /// Fresh until this second; after it the entry is expired (nginx
    /// serves it when `valid_sec >= now`).
    pub valid_sec: i64,
    /// `stale-while-revalidate`: seconds after `valid_sec` during which the
    /// stale entry may be served while it is being updated.
    pub updating_sec: i64,
    /// `stale-if-error`: seconds after `valid_sec` during which the stale
    /// entry may be served when the upstream fails.
    pub error_sec: i64,
    /// The response's `Last-Modified` (for `If-Modified-Since` on
    /// revalidation); -1 when absent, unparsable, or the status is not 200
    /// or 206.
    pub last_modified: i64,
    /// When the entry was stored or last revalidated (nginx's clock, not
    /// the upstream's `Date`).
    pub date: i64,
    /// CRC32 of the key, checked on read.
    pub crc32: u32,
    /// Milliseconds part of `valid_sec`; nginx 1.22 always writes 0 here
    /// (it keeps what it reads).
    pub valid_msec: u16,
    /// Where the upstream's status line starts: [`header_start`] of the key.
    pub header_start: u16,
    /// Where the body starts: `header_start` plus the head's length.
    pub body_start: u16,
    /// The response's `ETag` (for `If-None-Match`); empty when absent,
    /// longer than [`ETAG_LEN`] or the status is not 200 or 206.
    pub etag: Vec<u8>,
    /// The response's `Vary` (at most [`VARY_LEN`] bytes); empty if none.
    pub vary: Vec<u8>,
    /// The variant hash of the request that stored it (zero without
    /// `Vary`); see [`super::key::variant`].
    pub variant: [u8; KEY_LEN],
}

/// Where the upstream's status line starts in the file of a key of
/// `key_len` bytes (nginx's `c->header_start`).
pub fn header_start(key_len: usize) -> usize {
    HEADER_SIZE + KEY_PREFIX.len() + key_len + 1
}

/// Checks that a key of `key_len` bytes leaves [`HEAD_ROOM`] for the
/// upstream's head in a `proxy_buffer_size` of `buffer_size`, and returns
/// its [`header_start`]. On failure nginx logs the error and proxies the
/// request without the cache (no `$upstream_cache_status`).
///
/// With the cache the upstream's head must fit in `buffer_size` minus
/// `header_start`: nginx reads it after the reserved room, and says
/// "upstream sent too big header" when it does not fit.
pub fn reserve(key_len: usize, buffer_size: usize) -> Result<usize, FormatError> {
    let start = header_start(key_len);
    if start + HEAD_ROOM > buffer_size {
        return Err(FormatError::BufferTooSmall {
            buffer_size,
            at_least: (start + HEAD_ROOM).next_multiple_of(SUGGESTION_ALIGN),
        });
    }
    Ok(start)
}

impl EntryHeader {
    /// A version-[`VERSION`] header for `key`'s entry whose upstream head
    /// is `head_len` bytes: offsets and CRC set, times zero, no
    /// `Last-Modified` (-1), no `ETag`, `Vary` or variant.
    pub fn for_entry(key: &CacheKey, head_len: usize) -> Result<EntryHeader, FormatError> {
        let start = header_start(key.text().len());
        let too_long = |_| FormatError::TooLongHeader {
            body_start: start + head_len,
            limit: usize::from(u16::MAX),
        };
        Ok(EntryHeader {
            version: VERSION,
            valid_sec: 0,
            updating_sec: 0,
            error_sec: 0,
            last_modified: -1,
            date: 0,
            crc32: key.crc32(),
            valid_msec: 0,
            header_start: u16::try_from(start).map_err(too_long)?,
            body_start: u16::try_from(start + head_len).map_err(too_long)?,
            etag: Vec::new(),
            vary: Vec::new(),
            variant: [0; KEY_LEN],
        })
    }

    /// The struct's bytes, as `ngx_http_file_cache_set_header` fills it: an
    /// `etag` longer than [`ETAG_LEN`] is left out, a `vary` longer than
    /// [`VARY_LEN`] cut, everything else zero.
    pub fn to_bytes(&self) -> [u8; HEADER_SIZE] {
        let mut b = [0u8; HEADER_SIZE];
        b[OFF_VERSION..][..8].copy_from_slice(&self.version.to_le_bytes());
        b[OFF_VALID_SEC..][..8].copy_from_slice(&self.valid_sec.to_le_bytes());
        b[OFF_UPDATING_SEC..][..8].copy_from_slice(&self.updating_sec.to_le_bytes());
        b[OFF_ERROR_SEC..][..8].copy_from_slice(&self.error_sec.to_le_bytes());
        b[OFF_LAST_MODIFIED..][..8].copy_from_slice(&self.last_modified.to_le_bytes());
        b[OFF_DATE..][..8].copy_from_slice(&self.date.to_le_bytes());
        b[OFF_CRC32..][..4].copy_from_slice(&self.crc32.to_le_bytes());
        b[OFF_VALID_MSEC..][..2].copy_from_slice(&self.valid_msec.to_le_bytes());
        b[OFF_HEADER_START..][..2].copy_from_slice(&self.header_start.to_le_bytes());
        b[OFF_BODY_START..][..2].copy_from_slice(&self.body_start.to_le_bytes());
        if self.etag.len() <= ETAG_LEN {
            b[OFF_ETAG_LEN] = self.etag.len() as u8;
            b[OFF_ETAG..][..self.etag.len()].copy_from_slice(&self.etag);
        }
        let vary = &self.vary[..self.vary.len().min(VARY_LEN)];
        if !vary.is_empty() {
            b[OFF_VARY_LEN] = vary.len() as u8;
            b[OFF_VARY..][..vary.len()].copy_from_slice(vary);
            b[OFF_VARIANT..][..KEY_LEN].copy_from_slice(&self.variant);
        }
        b
    }

    /// Reads the struct from the first [`HEADER_SIZE`] bytes of `buf`,
    /// without checking it against a key. Fails when `buf` is shorter or
    /// the `vary` length is impossible. An `etag` length over
    /// [`ETAG_LEN`] runs into the bytes after it, as it does in nginx,
    /// which does not check it.
    pub fn from_bytes(buf: &[u8]) -> Result<EntryHeader, FormatError> {
        let b: &[u8; HEADER_SIZE] = buf
            .get(..HEADER_SIZE)
            .and_then(|s| s.try_into().ok())
            .ok_or(FormatError::TooSmall {
                len: buf.len(),
                need: HEADER_SIZE,
            })?;
        let vary_len = usize::from(b[OFF_VARY_LEN]);
        if vary_len > VARY_LEN {
            return Err(FormatError::IncorrectVaryLength { len: vary_len });
        }
        let etag_len = usize::from(b[OFF_ETAG_LEN]);
        Ok(EntryHeader {
            version: u64::from_le_bytes(arr(b, OFF_VERSION)),
            valid_sec: i64::from_le_bytes(arr(b, OFF_VALID_SEC)),
            updating_sec: i64::from_le_bytes(arr(b, OFF_UPDATING_SEC)),
            error_sec: i64::from_le_bytes(arr(b, OFF_ERROR_SEC)),
            last_modified: i64::from_le_bytes(arr(b, OFF_LAST_MODIFIED)),
            date: i64::from_le_bytes(arr(b, OFF_DATE)),
            crc32: u32::from_le_bytes(arr(b, OFF_CRC32)),
            valid_msec: u16::from_le_bytes(arr(b, OFF_VALID_MSEC)),
            header_start: u16::from_le_bytes(arr(b, OFF_HEADER_START)),
            body_start: u16::from_le_bytes(arr(b, OFF_BODY_START)),
            etag: b[OFF_ETAG..][..etag_len].to_vec(),
            vary: b[OFF_VARY..][..vary_len].to_vec(),
            variant: arr(b, OFF_VARIANT),
        })
    }
}

/// `N` bytes of `b` from `at`; the offsets are constants inside the struct.
fn arr<const N: usize>(b: &[u8; HEADER_SIZE], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&b[at..at + N]);
    out
}

/// The start of a cache file: the struct, then `\nKEY: <key>\n`. Its length
/// is the key's [`header_start`]; the caller writes the upstream's status
/// line and headers after it (up to `h.body_start`), then the body. `h` is
/// written as given: its `header_start` must be [`header_start`] of `key`
/// and its `crc32` the key's, or nginx (and [`decode`]) will call the file
/// an MD5 collision.
pub fn encode(h: &EntryHeader, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(header_start(key.len()));
    out.extend_from_slice(&h.to_bytes());
    out.extend_from_slice(KEY_PREFIX);
    out.extend_from_slice(key);
    out.push(b'\n');
    out
}

/// A cache file's start, checked and split.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry<'a> {
    /// The struct.
    pub header: EntryHeader,
    /// The upstream's status line and header fields as received, blank
    /// line included; empty for an HTTP/0.9 upstream (nginx then sends the
    /// body alone).
    pub head: &'a [u8],
}

impl Entry<'_> {
    /// Where the body starts in the file; it runs to the file's end.
    pub fn body_start(&self) -> usize {
        usize::from(self.header.body_start)
    }
}

/// Reads the start of a cache file found under `key`, as
/// `ngx_http_file_cache_read` does, in its order: the file must hold the
/// whole `header_start`, be of [`VERSION`], carry the key's CRC32, offset
/// and bytes (else it is another key with the same MD5), and its
/// `body_start` must not exceed `max_body_start` (nginx's `c->body_start`:
/// `proxy_buffer_size`, or the `body_start` the zone recorded for the
/// entry). `buf` is what the caller read from offset 0: at least
/// `max_body_start` bytes, or the whole file if it is shorter.
///
/// The variant is not checked here: it needs the request (see
/// [`super::key::check_variant`]).
pub fn decode<'a>(
    buf: &'a [u8],
    key: &CacheKey,
    max_body_start: usize,
) -> Result<Entry<'a>, FormatError> {
    let key_text = key.text();
    let start = header_start(key_text.len());
    if buf.len() < start {
        return Err(FormatError::TooSmall {
            len: buf.len(),
            need: start,
        });
    }
    // Checked above: the buffer holds the struct and the key line.
    let b: &[u8; HEADER_SIZE] =
        buf[..HEADER_SIZE]
            .try_into()
            .map_err(|_| FormatError::TooSmall {
                len: buf.len(),
                need: start,
            })?;
    let version = u64::from_le_bytes(arr(b, OFF_VERSION));
    if version != VERSION {
        return Err(FormatError::VersionMismatch { found: version });
    }
    let crc = u32::from_le_bytes(arr(b, OFF_CRC32));
    if crc != key.crc32() {
        return Err(FormatError::Md5Collision(Collision::Crc32 {
            found: crc,
            expected: key.crc32(),
        }));
    }
    let found_start = usize::from(u16::from_le_bytes(arr(b, OFF_HEADER_START)));
    if found_start != start {
        return Err(FormatError::Md5Collision(Collision::HeaderStart {
            found: found_start,
            expected: start,
        }));
    }
    let key_at = HEADER_SIZE + KEY_PREFIX.len();
    if &buf[key_at..key_at + key_text.len()] != key_text {
        return Err(FormatError::Md5Collision(Collision::Key));
    }
    let body_start = usize::from(u16::from_le_bytes(arr(b, OFF_BODY_START)));
    if body_start > max_body_start {
        return Err(FormatError::TooLongHeader {
            body_start,
            limit: max_body_start,
        });
    }
    let header = EntryHeader::from_bytes(buf)?;
    // nginx goes on and fails to parse the head ("contains invalid
    // header"); nowait refuses the offsets before slicing by them.
    if body_start < start {
        return Err(FormatError::InvalidHeader("the body starts inside the key"));
    }
    if body_start > buf.len() {
        return Err(FormatError::InvalidHeader("the file ends inside the head"));
    }
    Ok(Entry {
        header,
        head: &buf[start..body_start],
    })
}

/// The validity a `304` revalidation gave an entry
/// (`ngx_http_upstream_test_next`, "http upstream not modified").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refreshed {
    /// The new end of freshness.
    pub valid_sec: i64,
    /// The new `stale-while-revalidate` seconds.
    pub updating_sec: i64,
    /// The new `stale-if-error` seconds.
    pub error_sec: i64,
    /// Now.
    pub date: i64,
}

/// Why [`update_header`] leaves a file alone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UpdateSkip {
    /// The file is shorter than the struct: nginx logs at `crit`
    /// `read() read only N of 336 from "FILE"` ([`UpdateSkip::message`]).
    ShortRead {
        /// How many bytes there were.
        len: usize,
    },
    /// The file holds another entry now (version, `Last-Modified`, CRC32
    /// or offsets differ from what the hit read): nginx leaves it, quietly.
    ContentChanged,
}

impl UpdateSkip {
    /// nginx's log line for `file`, if it logs one.
    pub fn message(&self, file: &str) -> Option<String> {
        match self {
            UpdateSkip::ShortRead { len } => Some(format!(
                "read() read only {len} of {HEADER_SIZE} from \"{file}\""
            )),
            UpdateSkip::ContentChanged => None,
        }
    }
}

/// The struct to write at offset 0 of an entry's file after a `304`
/// revalidated it (`ngx_http_file_cache_update_header`). `on_disk` is what
/// the file's first [`HEADER_SIZE`] bytes are now, `at_hit` the header the
/// hit read. The caller opens the file read-write, checks first that it is
/// still the file it read (same inode and size, else nginx does nothing),
/// and writes the result over the struct. Only `valid_sec`,
/// `updating_sec`, `error_sec` and `date` change; the rest is written
/// again as read (nginx rebuilds `vary` and `variant` from the request,
/// which matched them to be a hit).
pub fn update_header(
    on_disk: &[u8],
    at_hit: &EntryHeader,
    fresh: &Refreshed,
) -> Result<[u8; HEADER_SIZE], UpdateSkip> {
    let b: &[u8; HEADER_SIZE] = on_disk
        .get(..HEADER_SIZE)
        .and_then(|s| s.try_into().ok())
        .ok_or(UpdateSkip::ShortRead { len: on_disk.len() })?;
    let same = u64::from_le_bytes(arr(b, OFF_VERSION)) == VERSION
        && i64::from_le_bytes(arr(b, OFF_LAST_MODIFIED)) == at_hit.last_modified
        && u32::from_le_bytes(arr(b, OFF_CRC32)) == at_hit.crc32
        && u16::from_le_bytes(arr(b, OFF_HEADER_START)) == at_hit.header_start
        && u16::from_le_bytes(arr(b, OFF_BODY_START)) == at_hit.body_start;
    if !same {
        return Err(UpdateSkip::ContentChanged);
    }
    let mut h = at_hit.clone();
    h.version = VERSION;
    h.valid_sec = fresh.valid_sec;
    h.updating_sec = fresh.updating_sec;
    h.error_sec = fresh.error_sec;
    h.date = fresh.date;
    Ok(h.to_bytes())
}

/// How a stored key differs from the expected one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Collision {
    /// The stored CRC32 is another key's.
    Crc32 {
        /// In the file.
        found: u32,
        /// The key's.
        expected: u32,
    },
    /// The stored `header_start` is for a key of another length.
    HeaderStart {
        /// In the file.
        found: usize,
        /// The key's.
        expected: usize,
    },
    /// The `KEY:` line holds other bytes.
    Key,
}

/// Why a cache file cannot answer for a key. Each is a miss for nginx
/// (the file is then overwritten by the next fill); the log words are
/// nginx's ([`FormatError::message`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FormatError {
    /// The file ends before its key line does.
    TooSmall {
        /// Bytes available.
        len: usize,
        /// Bytes needed.
        need: usize,
    },
    /// Another format version (another nginx, or an older one).
    VersionMismatch {
        /// The version in the file.
        found: u64,
    },
    /// The file's MD5 is the key's, but the key is not.
    Md5Collision(Collision),
    /// The stored head does not fit where the reader expects it.
    TooLongHeader {
        /// The file's `body_start`.
        body_start: usize,
        /// The most the reader takes.
        limit: usize,
    },
    /// A `vary` length over [`VARY_LEN`].
    IncorrectVaryLength {
        /// The length in the file.
        len: usize,
    },
    /// A file found under a variant hash is for yet another variant (the
    /// hit's check, after [`super::key::VariantCheck::Other`]).
    IncorrectVaryHash,
    /// The stored head cannot be read back as a response head.
    InvalidHeader(&'static str),
    /// `proxy_buffer_size` leaves too little room after the key.
    BufferTooSmall {
        /// `proxy_buffer_size`.
        buffer_size: usize,
        /// What nginx suggests.
        at_least: usize,
    },
}

impl FormatError {
    /// nginx's log line for the cache file `file`.
    pub fn message(&self, file: &str) -> String {
        match self {
            FormatError::TooSmall { .. } => format!("cache file \"{file}\" is too small"),
            FormatError::VersionMismatch { .. } => {
                format!("cache file \"{file}\" version mismatch")
            }
            FormatError::Md5Collision(_) => format!("cache file \"{file}\" has md5 collision"),
            FormatError::TooLongHeader { .. } => {
                format!("cache file \"{file}\" has too long header")
            }
            FormatError::IncorrectVaryLength { .. } => {
                format!("cache file \"{file}\" has incorrect vary length")
            }
            FormatError::IncorrectVaryHash => {
                format!("cache file \"{file}\" has incorrect vary hash")
            }
            FormatError::InvalidHeader(_) => {
                format!("cache file \"{file}\" contains invalid header")
            }
            FormatError::BufferTooSmall {
                buffer_size,
                at_least,
            } => format!(
                "proxy_buffer_size {buffer_size} is not enough for cache key, \
                 it should be increased to at least {at_least}"
            ),
        }
    }

    /// The level nginx logs [`FormatError::message`] at.
    pub fn level(&self) -> Level {
        match self {
            FormatError::VersionMismatch { .. } => Level::Info,
            FormatError::BufferTooSmall { .. } => Level::Error,
            _ => Level::Crit,
        }
    }
}

impl fmt::Display for FormatError {
    /// What is wrong, with the numbers nginx does not log.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FormatError::TooSmall { len, need } => {
                write!(
                    f,
                    "cache file is too small: {len} bytes, the key line ends at {need}"
                )
            }
            FormatError::VersionMismatch { found } => {
                write!(f, "cache file version mismatch: {found}, not {VERSION}")
            }
            FormatError::Md5Collision(Collision::Crc32 { found, expected }) => write!(
                f,
                "cache file has md5 collision: CRC32 {found:#010x}, the key's is {expected:#010x}"
            ),
            FormatError::Md5Collision(Collision::HeaderStart { found, expected }) => write!(
                f,
                "cache file has md5 collision: header_start {found}, the key's is {expected}"
            ),
            FormatError::Md5Collision(Collision::Key) => {
                write!(f, "cache file has md5 collision: another key")
            }
            FormatError::TooLongHeader { body_start, limit } => write!(
                f,
                "cache file has too long header: body_start {body_start}, at most {limit}"
            ),
            FormatError::IncorrectVaryLength { len } => write!(
                f,
                "cache file has incorrect vary length: {len}, at most {VARY_LEN}"
            ),
            FormatError::IncorrectVaryHash => write!(f, "cache file has incorrect vary hash"),
            FormatError::InvalidHeader(why) => {
                write!(f, "cache file contains invalid header: {why}")
            }
            FormatError::BufferTooSmall { .. } => f.write_str(&self.message("")),
        }
    }
}

impl std::error::Error for FormatError {}

#[cfg(test)]
mod tests;
