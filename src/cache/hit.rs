//! Reading a cache entry: open the file (`openat2(RESOLVE_CACHED)` on the
//! loop, else the pool), read its start (`RWF_NOWAIT` on the loop, else the
//! pool), check it as nginx does (`ngx_http_file_cache_read`: version,
//! CRC32, the stored key, `body_start`), and parse the stored upstream
//! head. The body is then sent like a static file's range: the same
//! never-blocking path (copies from memory on the loop, `sendfile` in the
//! pool).

use std::sync::Arc;

use super::format::{self, EntryHeader, FormatError};
use super::key::CacheKey;
use super::zone::Zone;
use crate::io::file::{FileError, FileLayer, OpenFile, Opened};
use crate::upstream::head::{self, HeadParse, ResponseHead};

/// An entry read from disk.
pub struct Hit {
    /// The open file (the body is sent from it).
    pub file: OpenFile,
    /// Its header.
    pub header: EntryHeader,
    /// The stored upstream head (`None`: an HTTP/0.9 entry, body only).
    pub head: Option<ResponseHead>,
    /// Where the body starts.
    pub body_start: u64,
}

impl Hit {
    /// The body's length.
    pub fn body_len(&self) -> u64 {
        self.file.meta.size.saturating_sub(self.body_start)
    }
}

/// Why an entry could not be used.
#[derive(Debug)]
pub enum Unusable {
    /// No file (a cold zone's probe found nothing, or it was removed).
    Missing,
    /// The file is not a valid entry for the key; nginx's log line.
    Invalid(FormatError, String),
    /// Opening or reading failed (logged by the caller).
    Io(FileError),
}

/// Reads the entry of `key` (its file of MD5 `md5`) in `zone`; at most
/// `max_body_start` bytes of its start are read (the `body_start` the zone
/// knows, else `proxy_buffer_size`).
pub async fn read(
    zone: &Zone,
    md5: &super::key::Md5,
    key: &CacheKey,
    files: FileLayer<'_>,
    max_body_start: usize,
) -> Result<Hit, Unusable> {
    let path = zone.path_of(md5);
    let file = match files.open(&path).await {
        Ok(Opened::Regular(f)) => f,
        Ok(Opened::Other(_)) => return Err(Unusable::Missing),
        Err(e) if matches!(e.errno(), Some(libc::ENOENT | libc::ENOTDIR)) => {
            return Err(Unusable::Missing);
        }
        Err(e) => return Err(Unusable::Io(e)),
    };
    let want = (file.meta.size as usize).min(max_body_start.max(format::HEADER_SIZE));
    let buf = files.read_at(&file, want, 0).await.map_err(Unusable::Io)?;
    let entry = match format::decode(&buf, key, max_body_start) {
        Ok(e) => e,
        Err(e) => {
            let msg = e.message(&path.to_string_lossy());
            return Err(Unusable::Invalid(e, msg));
        }
    };
    let body_start = entry.body_start() as u64;
    let head = if entry.head.is_empty() {
        None
    } else {
        match head::parse_head(entry.head) {
            Ok(HeadParse::Complete { head, .. }) => Some(head),
            _ => {
                let e = FormatError::InvalidHeader("the stored head is not a response head");
                let msg = e.message(&path.to_string_lossy());
                return Err(Unusable::Invalid(e, msg));
            }
        }
    };
    Ok(Hit {
        header: entry.header,
        file: OpenFile {
            path: Arc::from(path.as_path()),
            ..file
        },
        head,
        body_start,
    })
}
