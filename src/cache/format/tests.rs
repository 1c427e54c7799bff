use super::*;

/// `offsetof` and `sizeof` of each field of `ngx_http_file_cache_header_t`
/// as nginx 1.22.1 declares it, printed by gcc on x86-64 Linux for the
/// struct copied from `ngx_http_cache.h` (`ngx_uint_t` = `uintptr_t`).
const GCC_LAYOUT: [(&str, usize, usize); 15] = [
    ("version", 0, 8),
    ("valid_sec", 8, 8),
    ("updating_sec", 16, 8),
    ("error_sec", 24, 8),
    ("last_modified", 32, 8),
    ("date", 40, 8),
    ("crc32", 48, 4),
    ("valid_msec", 52, 2),
    ("header_start", 54, 2),
    ("body_start", 56, 2),
    ("etag_len", 58, 1),
    ("etag", 59, 128),
    ("vary_len", 187, 1),
    ("vary", 188, 128),
    ("variant", 316, 16),
];
/// gcc's `sizeof` of the struct.
const GCC_SIZEOF: usize = 336;

fn key() -> CacheKey {
    CacheKey::new(b"http://127.0.0.1:8081/a?b")
}

/// A header with every field set to something recognizable.
fn sample(key: &CacheKey) -> EntryHeader {
    let mut h = EntryHeader::for_entry(key, 40).expect("small head");
    h.valid_sec = 0x0102_0304_0506_0708;
    h.updating_sec = 11;
    h.error_sec = -2;
    h.last_modified = 1_700_000_000;
    h.date = 1_700_000_123;
    h.valid_msec = 0x0a0b;
    h.etag = b"\"abc\"".to_vec();
    h.vary = b"Accept-Encoding".to_vec();
    h.variant = [0x5a; KEY_LEN];
    h
}

#[test]
fn offsets_and_size_are_gccs() {
    assert_eq!(HEADER_SIZE, GCC_SIZEOF);
    let ours = [
        ("version", OFF_VERSION, 8),
        ("valid_sec", OFF_VALID_SEC, 8),
        ("updating_sec", OFF_UPDATING_SEC, 8),
        ("error_sec", OFF_ERROR_SEC, 8),
        ("last_modified", OFF_LAST_MODIFIED, 8),
        ("date", OFF_DATE, 8),
        ("crc32", OFF_CRC32, 4),
        ("valid_msec", OFF_VALID_MSEC, 2),
        ("header_start", OFF_HEADER_START, 2),
        ("body_start", OFF_BODY_START, 2),
        ("etag_len", OFF_ETAG_LEN, 1),
        ("etag", OFF_ETAG, ETAG_LEN),
        ("vary_len", OFF_VARY_LEN, 1),
        ("vary", OFF_VARY, VARY_LEN),
        ("variant", OFF_VARIANT, KEY_LEN),
    ];
    assert_eq!(ours, GCC_LAYOUT);
    // The padding is what is left after the last field, up to 8-alignment.
    assert_eq!(OFF_PADDING, OFF_VARIANT + KEY_LEN);
    assert_eq!(HEADER_SIZE, OFF_PADDING.next_multiple_of(8));
}

#[test]
fn fields_land_at_their_offsets_little_endian() {
    let k = key();
    let h = sample(&k);
    let b = h.to_bytes();
    assert_eq!(&b[0..8], &5u64.to_le_bytes());
    assert_eq!(&b[8..16], &[8, 7, 6, 5, 4, 3, 2, 1]);
    assert_eq!(&b[16..24], &11i64.to_le_bytes());
    assert_eq!(
        &b[24..32],
        &[0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
    );
    assert_eq!(&b[32..40], &1_700_000_000i64.to_le_bytes());
    assert_eq!(&b[40..48], &1_700_000_123i64.to_le_bytes());
    assert_eq!(&b[48..52], &k.crc32().to_le_bytes());
    assert_eq!(&b[52..54], &[0x0b, 0x0a]);
    let start = header_start(k.text().len()) as u16;
    assert_eq!(&b[54..56], &start.to_le_bytes());
    assert_eq!(&b[56..58], &(start + 40).to_le_bytes());
    assert_eq!(b[58], 5);
    assert_eq!(&b[59..64], b"\"abc\"");
    assert!(b[64..187].iter().all(|&x| x == 0));
    assert_eq!(b[187], 15);
    assert_eq!(&b[188..203], b"Accept-Encoding");
    assert!(b[203..316].iter().all(|&x| x == 0));
    assert_eq!(&b[316..332], &[0x5a; 16]);
    assert_eq!(&b[332..336], &[0; 4]);
}

#[test]
fn encode_is_exactly_header_start_long() {
    let k = key();
    let out = encode(&sample(&k), k.text());
    assert_eq!(out.len(), header_start(k.text().len()));
    assert_eq!(out.len(), 336 + 6 + 25 + 1);
    assert_eq!(&out[336..], b"\nKEY: http://127.0.0.1:8081/a?b\n");
}

#[test]
fn a_file_round_trips() {
    let k = key();
    let h = sample(&k);
    let head = b"HTTP/1.1 200 OK\r\nA: 1\r\nContent-Length: 2\r\n\r\n";
    let mut h = h;
    h.body_start = h.header_start + head.len() as u16;
    let mut file = encode(&h, k.text());
    file.extend_from_slice(head);
    file.extend_from_slice(b"hi");
    let e = decode(&file, &k, 4096).expect("decodes");
    assert_eq!(e.header, h);
    assert_eq!(e.head, head);
    assert_eq!(&file[e.body_start()..], b"hi");
    assert_eq!(EntryHeader::from_bytes(&file), Ok(h));
}

#[test]
fn an_http09_entry_has_an_empty_head() {
    let k = key();
    let h = EntryHeader::for_entry(&k, 0).expect("fits");
    let mut file = encode(&h, k.text());
    file.extend_from_slice(b"raw");
    let e = decode(&file, &k, 4096).expect("decodes");
    assert!(e.head.is_empty());
    assert_eq!(&file[e.body_start()..], b"raw");
}

#[test]
fn long_etag_is_dropped_and_long_vary_cut() {
    let k = key();
    let mut h = sample(&k);
    h.etag = vec![b'e'; ETAG_LEN + 1];
    h.vary = vec![b'v'; VARY_LEN + 5];
    let b = h.to_bytes();
    assert_eq!(b[OFF_ETAG_LEN], 0);
    assert!(b[OFF_ETAG..OFF_VARY_LEN].iter().all(|&x| x == 0));
    assert_eq!(usize::from(b[OFF_VARY_LEN]), VARY_LEN);
    let back = EntryHeader::from_bytes(&b).expect("reads");
    assert!(back.etag.is_empty());
    assert_eq!(back.vary, vec![b'v'; VARY_LEN]);
    // An etag of exactly the room is kept.
    h.etag = vec![b'e'; ETAG_LEN];
    let back = EntryHeader::from_bytes(&h.to_bytes()).expect("reads");
    assert_eq!(back.etag.len(), ETAG_LEN);
}

#[test]
fn no_vary_means_no_variant_written() {
    let k = key();
    let mut h = sample(&k);
    h.vary.clear();
    let b = h.to_bytes();
    assert_eq!(&b[OFF_VARIANT..OFF_VARIANT + KEY_LEN], &[0; KEY_LEN]);
}

/// A valid file for [`key`] with a 10-byte head.
fn file_for(k: &CacheKey) -> Vec<u8> {
    let h = EntryHeader::for_entry(k, 10).expect("fits");
    let mut f = encode(&h, k.text());
    f.extend_from_slice(b"HTTP/1.0 2");
    f
}

#[test]
fn decode_refuses_in_nginxs_order() {
    let k = key();
    let good = file_for(&k);
    let start = header_start(k.text().len());

    let short = &good[..start - 1];
    assert_eq!(
        decode(short, &k, 4096),
        Err(FormatError::TooSmall {
            len: start - 1,
            need: start
        })
    );

    let mut v4 = good.clone();
    v4[0] = 4;
    // A wrong CRC as well: the version is checked first.
    v4[OFF_CRC32] ^= 1;
    assert_eq!(
        decode(&v4, &k, 4096),
        Err(FormatError::VersionMismatch { found: 4 })
    );

    let mut crc = good.clone();
    crc[OFF_CRC32] ^= 1;
    assert!(matches!(
        decode(&crc, &k, 4096),
        Err(FormatError::Md5Collision(Collision::Crc32 { .. }))
    ));

    let mut hs = good.clone();
    hs[OFF_HEADER_START] ^= 1;
    assert!(matches!(
        decode(&hs, &k, 4096),
        Err(FormatError::Md5Collision(Collision::HeaderStart { .. }))
    ));

    let mut other = good.clone();
    *other.last_mut().expect("non-empty") = b'3';
    let key_at = HEADER_SIZE + KEY_PREFIX.len();
    other[key_at] = b'H';
    assert_eq!(
        decode(&other, &k, 4096),
        Err(FormatError::Md5Collision(Collision::Key))
    );

    assert_eq!(
        decode(&good, &k, start + 9),
        Err(FormatError::TooLongHeader {
            body_start: start + 10,
            limit: start + 9
        })
    );
    assert!(decode(&good, &k, start + 10).is_ok());

    let mut vary = good.clone();
    vary[OFF_VARY_LEN] = 129;
    // The body_start check comes first.
    assert!(matches!(
        decode(&vary, &k, start),
        Err(FormatError::TooLongHeader { .. })
    ));
    assert_eq!(
        decode(&vary, &k, 4096),
        Err(FormatError::IncorrectVaryLength { len: 129 })
    );
}

#[test]
fn decode_refuses_offsets_it_cannot_slice_by() {
    let k = key();
    let good = file_for(&k);
    let start = header_start(k.text().len());
    let mut before = good.clone();
    before[OFF_BODY_START..OFF_BODY_START + 2].copy_from_slice(&(start as u16 - 1).to_le_bytes());
    assert!(matches!(
        decode(&before, &k, 4096),
        Err(FormatError::InvalidHeader(_))
    ));
    // The file ends inside the head.
    assert!(matches!(
        decode(&good[..good.len() - 1], &k, 4096),
        Err(FormatError::InvalidHeader(_))
    ));
}

#[test]
fn the_key_lines_separators_are_not_checked() {
    // nginx compares the key bytes only, not "\nKEY: " nor the final LF.
    let k = key();
    let mut f = file_for(&k);
    f[HEADER_SIZE] = b'x';
    let end = header_start(k.text().len()) - 1;
    f[end] = b'y';
    assert!(decode(&f, &k, 4096).is_ok());
}

#[test]
fn messages_are_nginxs() {
    let f = "/c/9/6c/b81084b41c0d805db64b5521fbe066c9";
    let cases = [
        (
            FormatError::TooSmall { len: 1, need: 2 },
            "is too small",
            Level::Crit,
        ),
        (
            FormatError::VersionMismatch { found: 4 },
            "version mismatch",
            Level::Info,
        ),
        (
            FormatError::Md5Collision(Collision::Key),
            "has md5 collision",
            Level::Crit,
        ),
        (
            FormatError::TooLongHeader {
                body_start: 9,
                limit: 8,
            },
            "has too long header",
            Level::Crit,
        ),
        (
            FormatError::IncorrectVaryLength { len: 200 },
            "has incorrect vary length",
            Level::Crit,
        ),
        (
            FormatError::IncorrectVaryHash,
            "has incorrect vary hash",
            Level::Crit,
        ),
        (
            FormatError::InvalidHeader("x"),
            "contains invalid header",
            Level::Crit,
        ),
    ];
    for (e, words, level) in cases {
        assert_eq!(e.message(f), format!("cache file \"{f}\" {words}"));
        assert_eq!(e.level(), level, "{e}");
    }
}

#[test]
fn reserve_wants_256_bytes_after_the_key() {
    // 336 + 6 + 100 + 1 = 443.
    assert_eq!(reserve(100, 4096), Ok(443));
    assert_eq!(reserve(4096 - 256 - 343, 4096), Ok(4096 - 256));
    let e = reserve(4096 - 256 - 342, 4096).expect_err("too long");
    assert_eq!(
        e,
        FormatError::BufferTooSmall {
            buffer_size: 4096,
            at_least: 5120
        }
    );
    assert_eq!(
        e.message("ignored"),
        "proxy_buffer_size 4096 is not enough for cache key, \
         it should be increased to at least 5120"
    );
    assert_eq!(e.level(), Level::Error);
}

#[test]
fn for_entry_refuses_offsets_past_u16() {
    let k = key();
    assert!(EntryHeader::for_entry(&k, 60_000).is_ok());
    assert!(matches!(
        EntryHeader::for_entry(&k, 70_000),
        Err(FormatError::TooLongHeader { .. })
    ));
}

#[test]
fn update_header_changes_validity_and_date_only() {
    let k = key();
    let h = sample(&k);
    let on_disk = h.to_bytes();
    let fresh = Refreshed {
        valid_sec: 2_000_000_000,
        updating_sec: 3,
        error_sec: 4,
        date: 1_999_999_000,
    };
    let new = update_header(&on_disk, &h, &fresh).expect("same entry");
    for (i, (a, b)) in on_disk.iter().zip(new.iter()).enumerate() {
        let moved =
            (OFF_VALID_SEC..OFF_LAST_MODIFIED).contains(&i) || (OFF_DATE..OFF_CRC32).contains(&i);
        if !moved {
            assert_eq!(a, b, "byte {i} changed");
        }
    }
    let back = EntryHeader::from_bytes(&new).expect("reads");
    assert_eq!(back.valid_sec, 2_000_000_000);
    assert_eq!(back.updating_sec, 3);
    assert_eq!(back.error_sec, 4);
    assert_eq!(back.date, 1_999_999_000);
}

#[test]
fn update_header_leaves_a_replaced_file() {
    let k = key();
    let h = sample(&k);
    let fresh = Refreshed {
        valid_sec: 1,
        updating_sec: 0,
        error_sec: 0,
        date: 1,
    };
    let offsets = [
        OFF_VERSION,
        OFF_LAST_MODIFIED,
        OFF_CRC32,
        OFF_HEADER_START,
        OFF_BODY_START,
    ];
    for at in offsets {
        let mut disk = h.to_bytes();
        disk[at] ^= 1;
        assert_eq!(
            update_header(&disk, &h, &fresh),
            Err(UpdateSkip::ContentChanged),
            "offset {at}"
        );
    }
    // The etag may differ: nginx does not compare it.
    let mut disk = h.to_bytes();
    disk[OFF_ETAG] ^= 1;
    assert!(update_header(&disk, &h, &fresh).is_ok());
    let short = update_header(&disk[..100], &h, &fresh);
    assert_eq!(short, Err(UpdateSkip::ShortRead { len: 100 }));
    assert_eq!(
        UpdateSkip::ShortRead { len: 100 }
            .message("/c/f")
            .as_deref(),
        Some("read() read only 100 of 336 from \"/c/f\"")
    );
}
