//! Unit tests for `body`: each framing fed whole and a byte at a time,
//! nginx's lenient chunked parsing, its refusals, extra data after the end
//! (nginx-tests `proxy_extra_data.t`, `proxy_chunked_extra.t`) and the
//! keep-alive rule.

use super::*;
use crate::upstream::head::{HeadParse, parse_head};

/// Feeds `input` in pieces of `piece` bytes; the payload and progress.
fn feed(
    decoder: &mut BodyDecoder,
    input: &[u8],
    piece: usize,
) -> Result<(Vec<u8>, Progress), BodyError> {
    let mut data = Vec::new();
    let mut progress = Progress {
        complete: decoder.is_complete(),
        extra_data: false,
    };
    for chunk in input.chunks(piece.max(1)) {
        progress = decoder.decode(chunk, |d| data.extend_from_slice(d))?;
    }
    assert_eq!(decoder.received(), data.len() as u64);
    Ok((data, progress))
}

/// Decodes `input` with `framing` in every piece size from 1 to 8 and
/// whole; all must agree. Returns the payload and progress.
fn decode_all(framing: Framing, input: &[u8]) -> Result<(Vec<u8>, Progress), BodyError> {
    let whole = feed(&mut BodyDecoder::new(framing), input, input.len());
    for piece in 1..=8 {
        let split = feed(&mut BodyDecoder::new(framing), input, piece);
        assert_eq!(split, whole, "piece {piece}");
    }
    whole
}

const DONE: Progress = Progress {
    complete: true,
    extra_data: false,
};
const MORE: Progress = Progress {
    complete: false,
    extra_data: false,
};
const EXTRA: Progress = Progress {
    complete: true,
    extra_data: true,
};

#[test]
fn length_bodies() {
    assert_eq!(
        decode_all(Framing::Length(5), b"hello"),
        Ok((b"hello".to_vec(), DONE))
    );
    assert_eq!(
        decode_all(Framing::Length(5), b"hel"),
        Ok((b"hel".to_vec(), MORE))
    );
    // proxy_extra_data.t: "SEE-THIS" of "SEE-THIS-BUT-NOT-THIS".
    let (data, progress) = decode_all(Framing::Length(8), b"SEE-THIS-BUT-NOT-THIS\n").unwrap();
    assert_eq!((&data[..], progress), (&b"SEE-THIS"[..], EXTRA));
    let mut d = BodyDecoder::new(Framing::Length(8));
    d.decode(b"SEE-THIS-BUT-NOT-THIS\n", |_| {}).unwrap();
    assert_eq!(d.warning(), Some(EXTRA_AFTER_LENGTH));
    assert!(!d.keepalive());
}

#[test]
fn empty_bodies_take_nothing() {
    for framing in [Framing::Empty, Framing::Length(0)] {
        let mut d = BodyDecoder::new(framing);
        assert!(d.is_complete() && d.keepalive() && d.warning().is_none());
        assert_eq!(d.decode(b"", |_| panic!("no data")), Ok(DONE));
        // proxy_extra_data.t "/zero": Content-Length: 0 then "NOT-THIS".
        assert_eq!(d.decode(b"NOT-THIS\n", |_| panic!("no data")), Ok(EXTRA));
        assert_eq!(d.warning(), Some(EXTRA_AFTER_LENGTH));
        assert!(!d.keepalive());
    }
}

#[test]
fn until_close_bodies_end_at_eof_and_are_never_kept() {
    let mut d = BodyDecoder::new(Framing::UntilClose);
    let (data, progress) = feed(&mut d, b"any bytes\r\n0\r\n\r\n", 3).unwrap();
    assert_eq!(
        (&data[..], progress),
        (&b"any bytes\r\n0\r\n\r\n"[..], MORE)
    );
    assert_eq!(d.eof(), Ok(()));
    assert!(d.is_complete());
    assert!(!d.keepalive());
}

#[test]
fn eof_before_the_end_is_premature() {
    let mut d = BodyDecoder::new(Framing::Length(100));
    d.decode(b"SEE-THIS-TOO-SHORT-RESPONSE\n", |_| {}).unwrap();
    assert_eq!(d.eof(), Err(BodyError::PrematureClose));
    assert_eq!(
        BodyError::PrematureClose.to_string(),
        "upstream prematurely closed connection"
    );
    let mut d = BodyDecoder::new(Framing::Chunked);
    d.decode(b"5\r\nhello\r\n", |_| {}).unwrap();
    assert_eq!(d.eof(), Err(BodyError::PrematureClose));
    let mut d = BodyDecoder::new(Framing::Length(1));
    d.decode(b"x", |_| {}).unwrap();
    assert_eq!(
        d.eof(),
        Ok(()),
        "a complete body may be followed by a close"
    );
}

const CHUNKED: &[u8] = b"5\r\nhello\r\n6;name=val\r\n world\r\nA\r\n0123456789\r\n0\r\n\r\n";

#[test]
fn chunked_bodies() {
    assert_eq!(
        decode_all(Framing::Chunked, CHUNKED),
        Ok((b"hello world0123456789".to_vec(), DONE))
    );
    for cut in 0..CHUNKED.len() {
        let (_, progress) = decode_all(Framing::Chunked, &CHUNKED[..cut]).unwrap();
        assert_eq!(progress, MORE, "cut {cut}");
    }
}

#[test]
fn chunked_as_leniently_as_nginx() {
    for (input, payload) in [
        // Bare LF everywhere; upper and lower hex; leading zeros.
        (
            &b"5\nhello\nf\n0123456789ABCDE\n000\n\n"[..],
            &b"hello0123456789ABCDE"[..],
        ),
        // Extensions and trailers with any bytes, however long.
        (
            b"3 ;a=\"\x00\x01\xff\"\r\nabc\r\n0\t; x\r\nT: \x00\x7f\r\nU\r\n\r\n",
            b"abc",
        ),
        (b"3\t\r\nabc\r\n0 \r\n\r\n", b"abc"),
        // "5 5": the rest after a space is an extension to nginx.
        (b"5 5\r\nhello\r\n0\r\n\r\n", b"hello"),
        (b"0\r\n\r\n", b""),
        (b"0\n\n", b""),
        (b"0\r\nTrailer: x\n\r\n", b""),
    ] {
        assert_eq!(
            decode_all(Framing::Chunked, input),
            Ok((payload.to_vec(), DONE)),
            "{:?}",
            String::from_utf8_lossy(input)
        );
    }
    let mut long = b"1;".to_vec();
    long.extend(std::iter::repeat_n(b'e', 100_000));
    long.extend_from_slice(b"\r\nx\r\n0\r\n\r\n");
    assert_eq!(
        decode_all(Framing::Chunked, &long),
        Ok((b"x".to_vec(), DONE))
    );
}

#[test]
fn invalid_chunked_framing() {
    for bad in [
        &b"\r\n"[..],
        b"x\r\n",
        b"-1\r\n",
        b"+5\r\n",
        b"0x5\r\n",
        b";ext\r\n",
        b"5\r\nhelloX",
        b"5\r\nhello\rX",
        b"5\rhello",
        b"0\rX",
        b"0\r\n\rX",
        b"0\r\nT: 1\rX",
        b"5;ext\rX",
        b"0;ext\rX",
        // nginx: a size beyond off_t / 16 takes no further byte.
        b"1000000000000000\r\n",
        b"7ffffffffffffffff\r\n",
        b"ffffffffffffffffffff",
    ] {
        let e = decode_all(Framing::Chunked, bad);
        assert_eq!(
            e,
            Err(BodyError::InvalidChunked),
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
    assert_eq!(
        BodyError::InvalidChunked.to_string(),
        "upstream sent invalid chunked response"
    );
    // The largest size nginx takes.
    let mut d = BodyDecoder::new(Framing::Chunked);
    assert!(d.decode(b"7ffffffffffffff\r\nabc", |_| {}).is_ok());
}

#[test]
fn data_after_the_last_chunk() {
    let mut input = CHUNKED.to_vec();
    input.extend_from_slice(b"75\r\nzzz");
    let (data, progress) = decode_all(Framing::Chunked, &input).unwrap();
    assert_eq!(data, b"hello world0123456789");
    assert_eq!(progress, EXTRA);
    let mut d = BodyDecoder::new(Framing::Chunked);
    d.decode(&input, |_| {}).unwrap();
    assert_eq!(d.warning(), Some(EXTRA_AFTER_CHUNKS));
    assert!(!d.keepalive());
    // In a later read, too.
    let mut d = BodyDecoder::new(Framing::Chunked);
    assert_eq!(d.decode(CHUNKED, |_| {}), Ok(DONE));
    assert!(d.keepalive());
    assert_eq!(d.decode(b"0\r\n\r\n", |_| panic!("no data")), Ok(EXTRA));
    assert!(!d.keepalive());
}

#[test]
fn steps_hand_out_ranges_of_the_input() {
    let mut d = BodyDecoder::new(Framing::Chunked);
    let input = b"3\r\nabc\r\n2\r\nde\r\n0\r\n\r\nX";
    let mut pos = 0;
    let mut runs = Vec::new();
    while pos < input.len() {
        let step = d.step(&input[pos..]).unwrap();
        assert!(step.consumed > 0 && step.data.end <= step.consumed);
        if !step.data.is_empty() {
            runs.push(&input[pos..][step.data.clone()]);
        }
        pos += step.consumed;
    }
    assert_eq!(runs, [&b"abc"[..], b"de"]);
    assert!(d.is_complete() && d.extra_data());
    // A length body stops at its end, leaving the rest to the next step.
    let mut d = BodyDecoder::new(Framing::Length(2));
    assert_eq!(
        d.step(b"abcd"),
        Ok(Step {
            consumed: 2,
            data: 0..2
        })
    );
    assert!(!d.extra_data());
    assert_eq!(
        d.step(b"cd"),
        Ok(Step {
            consumed: 2,
            data: 0..0
        })
    );
    assert!(d.extra_data());
}

/// The decoder for the response `text` (head and body) to a GET or HEAD,
/// fed the body; whether the connection may be kept.
fn keepalive_after(text: &[u8], request_was_head: bool) -> bool {
    let Ok(HeadParse::Complete { head, len }) = parse_head(text) else {
        panic!("not a head: {:?}", String::from_utf8_lossy(text));
    };
    let mut d = BodyDecoder::for_response(&head, request_was_head);
    d.decode(&text[len..], |_| {}).unwrap();
    d.keepalive()
}

#[test]
fn keepalive_follows_nginx() {
    let yes = [
        &b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
        b"HTTP/1.1 204 No Content\r\n\r\n",
        b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n",
        b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
    ];
    for text in yes {
        assert!(
            keepalive_after(text, false),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    let no = [
        // Not read to the end yet.
        &b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok"[..],
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n",
        // The upstream closes.
        b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\n\r\nuntil close",
        // Extra data.
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokX",
        b"HTTP/1.1 204 No Content\r\n\r\nX",
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nX",
    ];
    for text in no {
        assert!(
            !keepalive_after(text, false),
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    // A HEAD answer has no body, whatever its head says; a body after it
    // is extra data.
    assert!(keepalive_after(
        b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\n",
        true
    ));
    assert!(!keepalive_after(
        b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nSEE-THIS",
        true
    ));
}
