//! Directory listings as nginx's autoindex module writes them
//! (`ngx_http_autoindex_module.c`): the HTML page (`ngx_http_autoindex_html`),
//! JSON and JSONP (`ngx_http_autoindex_json`) and XML
//! (`ngx_http_autoindex_xml`), byte for byte, from entries already read.
//!
//! Owns: the order of entries, names cut to 50 columns, escaping, sizes and
//! dates. Must not: read directories (`io::file::FileLayer::read_dir`
//! does) or decide which requests get a listing (`server/autoindex.rs`).

use super::charset::utf8_length;
use super::date::{civil, format_unix, month_name};
use super::escape::{
    escape_html, escape_json, escape_uri_component, html_escapes, uri_component_escapes,
};

/// The columns a name takes in the HTML listing
/// (`NGX_HTTP_AUTOINDEX_NAME_LEN`); longer names are cut and end in `..>`.
pub const NAME_COLUMNS: usize = 50;

/// The longest `callback` name of a JSONP listing.
pub const MAX_CALLBACK_LEN: usize = 128;

/// One directory entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The name, as the file system has it (any bytes).
    pub name: Vec<u8>,
    /// A directory (or a link to one).
    pub dir: bool,
    /// A regular file (or a link to one).
    pub file: bool,
    /// Modification time, Unix seconds.
    pub mtime: i64,
    /// Size in bytes.
    pub size: u64,
}

/// nginx's order: directories first, then by name, byte by byte.
pub fn sort(entries: &mut [Entry]) {
    entries.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.name.cmp(&b.name)));
}

/// How the HTML listing is written.
#[derive(Clone, Copy, Debug, Default)]
pub struct HtmlOptions {
    /// The response is in UTF-8 (`charset utf-8`): names are counted and cut
    /// by characters instead of bytes.
    pub utf8: bool,
    /// Seconds to add to each time (`autoindex_localtime on`: the server's
    /// UTC offset now; 0 for UTC).
    pub offset: i64,
    /// `autoindex_exact_size`: sizes in bytes, or rounded to K, M, G.
    pub exact_size: bool,
}

/// The HTML page listing `entries` (sorted) of the directory at `uri`.
pub fn html(uri: &[u8], entries: &[Entry], o: HtmlOptions) -> Vec<u8> {
    let mut b = Vec::with_capacity(256 + entries.len() * 120);
    let escaped_uri = html_escapes(uri) > 0;
    let title = |b: &mut Vec<u8>| {
        if escaped_uri {
            escape_html(uri, b);
        } else {
            b.extend_from_slice(uri);
        }
    };
    b.extend_from_slice(b"<html>\r\n<head><title>Index of ");
    title(&mut b);
    b.extend_from_slice(b"</title></head>\r\n<body>\r\n<h1>Index of ");
    title(&mut b);
    b.extend_from_slice(b"</h1><hr><pre><a href=\"../\">../</a>\r\n");
    for e in entries {
        html_entry(&mut b, e, o);
    }
    b.extend_from_slice(b"</pre><hr></body>\r\n</html>\r\n");
    b
}

/// One line of the HTML listing: link, name cut to [`NAME_COLUMNS`], date
/// and size.
fn html_entry(b: &mut Vec<u8>, e: &Entry, o: HtmlOptions) {
    let name = &e.name[..];
    b.extend_from_slice(b"<a href=\"");
    if uri_component_escapes(name) > 0 {
        escape_uri_component(name, b);
    } else {
        b.extend_from_slice(name);
    }
    if e.dir {
        b.push(b'/');
    }
    b.extend_from_slice(b"\">");
    let mut len = if o.utf8 {
        utf8_length(name)
    } else {
        name.len()
    };
    let escape = html_escapes(name) > 0;
    let last;
    if name.len() != len {
        // Counted in characters: copy whole characters, 47 of a long name.
        let chars = if len > NAME_COLUMNS {
            NAME_COLUMNS - 3
        } else {
            NAME_COLUMNS
        };
        let copied = utf8_prefix(name, chars);
        if escape {
            escape_html(&name[..copied], b);
        } else {
            b.extend_from_slice(&name[..copied]);
        }
        last = b.len();
    } else if escape {
        let n = if len > NAME_COLUMNS {
            NAME_COLUMNS - 3
        } else {
            len
        };
        escape_html(&name[..n], b);
        last = b.len();
    } else {
        b.extend_from_slice(&name[..len.min(NAME_COLUMNS)]);
        last = b.len().saturating_sub(3);
    }
    if len > NAME_COLUMNS {
        b.truncate(last);
        b.extend_from_slice(b"..&gt;</a>");
    } else {
        if e.dir && NAME_COLUMNS > len {
            b.push(b'/');
            len += 1;
        }
        b.extend_from_slice(b"</a>");
        b.resize(b.len() + NAME_COLUMNS.saturating_sub(len), b' ');
    }
    b.push(b' ');
    let t = civil(e.mtime.saturating_add(o.offset));
    b.extend_from_slice(
        format!(
            "{:02}-{}-{} {:02}:{:02} ",
            t.day,
            month_name(t.month),
            t.year,
            t.hour,
            t.minute
        )
        .as_bytes(),
    );
    if o.exact_size {
        if e.dir {
            b.extend_from_slice(b"                  -");
        } else {
            b.extend_from_slice(format!("{:>19}", e.size).as_bytes());
        }
    } else if e.dir {
        b.extend_from_slice(b"      -");
    } else {
        b.extend_from_slice(rounded_size(e.size).as_bytes());
    }
    b.extend_from_slice(b"\r\n");
}

/// The size as the HTML listing shows it without `autoindex_exact_size`:
/// up to 9999 bytes as they are, then K, M or G rounded half up, in seven
/// columns.
pub fn rounded_size(length: u64) -> String {
    const K: u64 = 1024;
    const M: u64 = K * K;
    const G: u64 = M * K;
    let (size, scale) = if length > G - 1 {
        (length / G + u64::from(length % G > G / 2 - 1), 'G')
    } else if length > M - 1 {
        (length / M + u64::from(length % M > M / 2 - 1), 'M')
    } else if length > 9999 {
        (length / K + u64::from(length % K > 511), 'K')
    } else {
        return format!(" {length:>6}");
    };
    format!("{size:>6}{scale}")
}

/// How many bytes of `name` hold its first `chars` characters, as
/// `ngx_utf8_cpystrn` copies them: whole characters, stopping at invalid
/// UTF-8.
fn utf8_prefix(name: &[u8], chars: usize) -> usize {
    let mut i = 0;
    for _ in 0..chars {
        let Some(&c) = name.get(i) else {
            break;
        };
        if c < 0x80 {
            if c == 0 {
                break;
            }
            i += 1;
            continue;
        }
        let (u, used) = super::charset::utf8_decode(&name[i..]);
        if u > 0x10ffff {
            break;
        }
        i += used;
    }
    i
}

/// The JSON listing, or JSONP with `callback` (already checked with
/// [`valid_callback`]).
pub fn json(entries: &[Entry], callback: Option<&[u8]>) -> Vec<u8> {
    let mut b = Vec::with_capacity(16 + entries.len() * 100);
    if let Some(cb) = callback {
        b.extend_from_slice(b"/* callback */\r\n");
        b.extend_from_slice(cb);
        b.push(b'(');
    }
    b.push(b'[');
    for e in entries {
        b.extend_from_slice(b"\r\n{ \"name\":\"");
        escape_json(&e.name, &mut b);
        b.extend_from_slice(b"\", \"type\":\"");
        b.extend_from_slice(kind(e).as_bytes());
        b.extend_from_slice(b"\", \"mtime\":\"");
        b.extend_from_slice(format_unix(e.mtime).as_bytes());
        if e.file {
            b.extend_from_slice(format!("\", \"size\":{}", e.size).as_bytes());
        } else {
            b.push(b'"');
        }
        b.extend_from_slice(b" },");
    }
    if !entries.is_empty() {
        b.pop();
    }
    b.extend_from_slice(b"\r\n]");
    if callback.is_some() {
        b.extend_from_slice(b");");
    }
    b
}

/// Whether a JSONP `callback` name is acceptable: at most
/// [`MAX_CALLBACK_LEN`] letters, digits, `_` and `.`
/// (`ngx_http_autoindex_jsonp_callback`).
pub fn valid_callback(name: &[u8]) -> bool {
    name.len() <= MAX_CALLBACK_LEN
        && name
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.')
}

/// The XML listing.
pub fn xml(entries: &[Entry]) -> Vec<u8> {
    let mut b = Vec::with_capacity(64 + entries.len() * 100);
    b.extend_from_slice(b"<?xml version=\"1.0\"?>\r\n<list>\r\n");
    for e in entries {
        let t = civil(e.mtime);
        b.push(b'<');
        b.extend_from_slice(kind(e).as_bytes());
        b.extend_from_slice(
            format!(
                " mtime=\"{:4}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
                t.year, t.month, t.day, t.hour, t.minute, t.second
            )
            .as_bytes(),
        );
        if e.file {
            b.extend_from_slice(format!("\" size=\"{}", e.size).as_bytes());
        }
        b.extend_from_slice(b"\">");
        escape_html(&e.name, &mut b);
        b.extend_from_slice(b"</");
        b.extend_from_slice(kind(e).as_bytes());
        b.extend_from_slice(b">\r\n");
    }
    b.extend_from_slice(b"</list>\r\n");
    b
}

/// `directory`, `file` or `other`.
fn kind(e: &Entry) -> &'static str {
    if e.dir {
        "directory"
    } else if e.file {
        "file"
    } else {
        "other"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, size: u64) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            dir: false,
            file: true,
            mtime: 1_795_312_054,
            size,
        }
    }

    fn dir(name: &str) -> Entry {
        Entry {
            name: name.as_bytes().to_vec(),
            dir: true,
            file: false,
            mtime: 0,
            size: 4096,
        }
    }

    fn text(b: Vec<u8>) -> String {
        String::from_utf8(b).unwrap()
    }

    const EXACT: HtmlOptions = HtmlOptions {
        utf8: false,
        offset: 0,
        exact_size: true,
    };

    #[test]
    fn directories_come_first_then_names_by_bytes() {
        let mut v = vec![file("b", 1), dir("z"), file("B", 1), dir("a")];
        sort(&mut v);
        let names: Vec<&[u8]> = v.iter().map(|e| &e.name[..]).collect();
        assert_eq!(names, [&b"a"[..], b"z", b"B", b"b"]);
    }

    #[test]
    fn html_page_as_nginx_writes_it() {
        let page = text(html(b"/d<&/", &[dir("sub"), file("f x", 42)], EXACT));
        assert_eq!(
            page,
            "<html>\r\n<head><title>Index of /d&lt;&amp;/</title></head>\r\n<body>\r\n\
             <h1>Index of /d&lt;&amp;/</h1><hr><pre><a href=\"../\">../</a>\r\n\
             <a href=\"sub/\">sub/</a>                                               \
             01-Jan-1970 00:00                   -\r\n\
             <a href=\"f%20x\">f x</a>                                                \
             22-Nov-2026 01:47                  42\r\n\
             </pre><hr></body>\r\n</html>\r\n"
        );
    }

    #[test]
    fn long_names_are_cut_at_47_columns() {
        let long = format!("test-long-{}", "0".repeat(50));
        let page = text(html(b"/", &[file(&long, 0)], EXACT));
        assert!(page.contains(&format!("test-long-{}..&gt;</a> ", "0".repeat(37))));
        let escaped = format!("test-long-{}", ">".repeat(50));
        let page = text(html(b"/", &[file(&escaped, 0)], EXACT));
        assert!(page.contains(&format!("test-long-{}..&gt;</a> ", "&gt;".repeat(37))));
    }

    #[test]
    fn utf8_names_are_counted_in_characters() {
        let o = HtmlOptions {
            utf8: true,
            ..EXACT
        };
        let name = format!("test-utf8-{}", "ф".repeat(45));
        let page = text(html(b"/", &[file(&name, 0)], o));
        assert!(page.contains(&format!("test-utf8-{}..&gt;", "ф".repeat(37))));
        let name = format!("test-utf8-<>&-{}", "ф".repeat(45));
        let page = text(html(b"/", &[file(&name, 0)], o));
        assert!(page.contains(&format!("test-utf8-&lt;&gt;&amp;-{}..", "ф".repeat(33))));
        // A short name is padded by characters, not bytes.
        let page = text(html(b"/", &[file("ффф", 0)], o));
        assert!(page.contains(&format!("ффф</a>{} ", " ".repeat(47))));
    }

    #[test]
    fn sizes_rounded_as_nginx() {
        assert_eq!(rounded_size(0), "      0");
        assert_eq!(rounded_size(9999), "   9999");
        assert_eq!(rounded_size(10_000), "    10K");
        assert_eq!(rounded_size(10_752), "    11K");
        assert_eq!(rounded_size(1024 * 1024 - 1), "  1024K");
        assert_eq!(rounded_size(1024 * 1024 * 3 / 2), "     2M");
        assert_eq!(rounded_size(5 << 30), "     5G");
        let o = HtmlOptions {
            exact_size: false,
            ..EXACT
        };
        let page = text(html(b"/", &[dir("d"), file("f", 20_000)], o));
        assert!(page.contains("00:00       -\r\n"), "{page}");
        assert!(page.contains("01:47     20K\r\n"), "{page}");
    }

    #[test]
    fn local_time_shifts_dates() {
        let o = HtmlOptions {
            offset: 3 * 3600,
            ..EXACT
        };
        assert!(text(html(b"/", &[file("f", 0)], o)).contains("22-Nov-2026 04:47 "));
    }

    #[test]
    fn json_and_jsonp() {
        let v = [dir("d"), file("a\"b", 42)];
        assert_eq!(
            text(json(&v, None)),
            "[\r\n{ \"name\":\"d\", \"type\":\"directory\", \"mtime\":\"Thu, 01 Jan 1970 00:00:00 GMT\" },\
             \r\n{ \"name\":\"a\\\"b\", \"type\":\"file\", \"mtime\":\"Sun, 22 Nov 2026 01:47:34 GMT\", \"size\":42 }\r\n]"
        );
        assert_eq!(
            text(json(&[], Some(b"foo"))),
            "/* callback */\r\nfoo([\r\n]);"
        );
        assert!(valid_callback(b"jQuery_1.2"));
        assert!(!valid_callback(b"alert(1)"));
        assert!(!valid_callback(&[b'a'; 129]));
    }

    #[test]
    fn xml_listing() {
        let mut other = file("p<", 0);
        other.file = false;
        assert_eq!(
            text(xml(&[dir("d"), file("f", 42), other])),
            "<?xml version=\"1.0\"?>\r\n<list>\r\n\
             <directory mtime=\"1970-01-01T00:00:00Z\">d</directory>\r\n\
             <file mtime=\"2026-11-22T01:47:34Z\" size=\"42\">f</file>\r\n\
             <other mtime=\"2026-11-22T01:47:34Z\">p&lt;</other>\r\n\
             </list>\r\n"
        );
    }
}
