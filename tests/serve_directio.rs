//! Black-box tests of `directio`: a file of at least its size is read with
//! `O_DIRECT`, past the page cache (its pages are not cached after it is
//! served, where without `directio` they are), in aligned blocks whatever
//! the range asked for, and never with `sendfile`; a smaller file is served
//! as any other. Every body is compared byte for byte with the file. nginx
//! 1.22's behaviour: run with `NOWAIT_TEST_NGINX=1` to check it.
//!
//! Pages are dropped with `posix_fadvise(DONTNEED)` after the file is
//! written back, and `cachestat()` tells what is cached. nginx reads the
//! unaligned start of a range and a last piece smaller than its buffer
//! without `O_DIRECT`, so a few of the file's pages are cached after it;
//! nowait reads those with `O_DIRECT` too (the blocks around them): none
//! is, and the tests hold it to that (the README says so among the
//! differences from nginx).

mod common;

use std::path::Path;
use std::time::Duration;

use common::client::{get, request};
use common::{Conf, Server, TempDir};
use nowait::sys::file as sysfile;

/// The file read with `O_DIRECT`: several `output_buffers` pieces, and not
/// a whole number of blocks.
const LARGE: usize = 300 * 1024 + 100;

/// Writes `name` in `dir`, readable by the workers and written back, with
/// none of its pages cached.
fn write_cold(dir: &Path, name: &str, data: &[u8]) {
    let path = dir.join(name);
    std::fs::write(&path, data).unwrap();
    std::fs::File::open(&path).unwrap().sync_all().unwrap();
    common::tmp::set_mode(&path, 0o644);
    let fd = sysfile::open_read(&path).unwrap();
    let mut cached = u64::MAX;
    for _ in 0..250 {
        sysfile::fadvise(&fd, 0, 0, sysfile::Advice::DontNeed).unwrap();
        cached = cached_pages(dir, name);
        if cached == 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(cached, 0, "{name}: the file system kept its pages (tmpfs?)");
}

/// The most pages of the `LARGE` file nginx's direct reads leave cached:
/// its pieces read without `O_DIRECT` (see the module's header), far fewer
/// than the file's 76 (nginx leaves 4 after the whole file, 24 after the
/// ranges below too).
const NGINX_FEW_PAGES: u64 = 32;

/// The most pages of the `LARGE` file `server`'s direct reads may leave
/// cached: none for nowait, which reads every piece with `O_DIRECT`;
/// [`NGINX_FEW_PAGES`] for nginx.
fn allowed_pages(server: &Server) -> u64 {
    match server.kind() {
        common::server::Kind::Nowait => 0,
        common::server::Kind::Nginx => NGINX_FEW_PAGES,
    }
}

/// How many pages of `name` are in the page cache.
fn cached_pages(dir: &Path, name: &str) -> u64 {
    let fd = sysfile::open_read(&dir.join(name)).unwrap();
    sysfile::cachestat(&fd, 0, 0)
        .expect("cachestat (Linux 6.5+)")
        .cached
}

fn serve(root: &Path, aio: &str) -> Server {
    let conf = Conf::server(&format!(
        "root {{root}};\n{aio}\nsendfile on;\n\
         location /direct/ {{ directio 64k; }}\n\
         location /aligned/ {{ alias {{root}}/direct/; directio 64k; directio_alignment 4k; output_buffers 1 20k; }}\n\
         location /plain/ {{ alias {{root}}/direct/; }}"
    ))
    .root(root)
    .render();
    Server::tested(&conf)
}

fn direct_reads_skip_the_page_cache(aio: &str) {
    let d = TempDir::new("directio");
    let dir = d.path().join("direct");
    std::fs::create_dir(&dir).unwrap();
    common::tmp::set_mode(d.path(), 0o755);
    common::tmp::set_mode(&dir, 0o755);
    let data = common::pattern(LARGE);
    write_cold(&dir, "big.bin", &data);
    write_cold(&dir, "small.bin", &data[..4096]);
    let s = serve(d.path(), aio);
    let allowed = allowed_pages(&s);

    let r = get(s.port(), "/direct/big.bin");
    assert_eq!(r.status, 200, "{aio}");
    assert!(r.body == data, "{aio}: the body differs from the file");
    let cached = cached_pages(&dir, "big.bin");
    assert!(
        cached <= allowed,
        "{aio}: O_DIRECT reads cached {cached} pages (at most {allowed})"
    );

    // Ranges that start and end inside blocks, across the buffers.
    for (path, first, last) in [
        ("/direct/big.bin", 1000usize, 70_000usize),
        ("/direct/big.bin", 65_535, 65_536),
        ("/aligned/big.bin", 4097, LARGE - 1),
        ("/aligned/big.bin", 0, 0),
    ] {
        let r = request(
            s.port(),
            &format!(
                "GET {path} HTTP/1.1\r\nHost: localhost\r\nRange: bytes={first}-{last}\r\nConnection: close\r\n\r\n"
            ),
        );
        assert_eq!(r.status, 206, "{aio} {path} {first}-{last}");
        assert!(
            r.body == data[first..=last],
            "{aio} {path} {first}-{last}: the body differs from the file"
        );
    }
    // Two ranges: a multipart body whose parts are the file's bytes.
    let r = request(
        s.port(),
        "GET /direct/big.bin HTTP/1.1\r\nHost: localhost\r\nRange: bytes=10-99,70000-70099\r\nConnection: close\r\n\r\n",
    );
    assert_eq!(r.status, 206, "{aio} multipart");
    for part in [&data[10..100], &data[70_000..70_100]] {
        assert!(
            r.body.windows(part.len()).any(|w| w == part),
            "{aio}: a part is missing from the multipart body"
        );
    }
    let cached = cached_pages(&dir, "big.bin");
    assert!(
        cached <= allowed,
        "{aio}: ranges cached {cached} pages (at most {allowed})"
    );

    // Below the size: the page cache as usual.
    let r = get(s.port(), "/direct/small.bin");
    assert!(r.status == 200 && r.body == data[..4096], "{aio}");
    assert!(
        cached_pages(&dir, "small.bin") > 0,
        "{aio}: a small file is cached"
    );

    // Without `directio`: the same file is cached once served.
    let r = get(s.port(), "/plain/big.bin");
    assert!(r.status == 200 && r.body == data, "{aio}");
    let cached = cached_pages(&dir, "big.bin");
    assert!(
        cached > NGINX_FEW_PAGES,
        "{aio}: read through the page cache: {cached} pages"
    );
}

#[test]
fn direct_reads_skip_the_page_cache_in_the_pool() {
    direct_reads_skip_the_page_cache("aio threads;");
}

#[test]
fn direct_reads_skip_the_page_cache_without_aio() {
    direct_reads_skip_the_page_cache("aio off;");
}
