//! `sub_filter` (nginx's `ngx_http_sub_filter_module`): strings in a
//! response of `sub_filter_types` are replaced as the body streams.
//!
//! Matching is nginx's: case-insensitive (ASCII), the body scanned from
//! left to right; at each position the strings are tried in the order
//! written and the first that matches whole is replaced, and the scan goes
//! on after it; with `sub_filter_once` (the default) each string is
//! replaced once. A string that may continue into the next piece holds the
//! bytes it covers back until the next piece decides; at the end of the
//! body, held bytes go out as they are. Strings with variables are
//! evaluated when the head is made (nginx's header filter), replacements
//! when first used.
//!
//! Memory: at most the longest string's length is held between pieces.

use std::collections::VecDeque;
use std::rc::Rc;
use std::task::{Context, Poll};

use bytes::Bytes;

use crate::body::{Source, SourceError};

use crate::server::core::reply::Reply;
use crate::server::core::request::Req;

/// The strings of one response, lowercased, each with the index of its
/// `sub_filter` pair (strings that evaluated empty are left out).
pub type Patterns = Rc<Vec<(Vec<u8>, usize)>>;

/// The header part (`ngx_http_sub_header_filter`).
pub fn header_filter(reply: &mut Reply, r: &Req<'_>) {
    let conf = r.conf;
    let length = crate::server::modules::filter::content_length(reply, r);
    if conf.sub_filter.is_empty()
        || length == Some(0)
        || !conf.sub_filter_types.matches(reply.content_type.as_deref())
    {
        return;
    }
    let patterns: Vec<(Vec<u8>, usize)> = conf
        .sub_filter
        .iter()
        .enumerate()
        .filter_map(|(i, (m, _))| {
            let v = r.expand(m).to_ascii_lowercase();
            (!v.is_empty()).then_some((v, i))
        })
        .collect();
    if patterns.is_empty() {
        return;
    }
    reply.filters.sub = Some(Rc::new(patterns));
    if r.is_main() {
        // The length goes with the filter; a static file's ranges too, as
        // nginx's range filter then sees no length.
        reply.length_override = None;
        reply.accept_ranges = false;
        crate::server::modules::filter::validators(reply, conf.sub_filter_last_modified);
    }
}

/// What [`Matcher`] found in the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Text to pass on.
    Text(Bytes),
    /// The string with this index (in the patterns) was found: its
    /// replacement goes here.
    Replace(usize),
}

/// nginx's matching, fed piece by piece.
#[derive(Debug)]
pub struct Matcher {
    /// The strings, lowercased, in the order written.
    patterns: Patterns,
    /// The shortest string's length.
    min: usize,
    /// `sub_filter_once`.
    once: bool,
    /// Which strings were replaced (for `once`).
    applied: Vec<bool>,
    /// How many were.
    applied_count: usize,
    /// `once` and every string replaced: the rest passes as it is.
    done: bool,
    /// Bytes a match may still start in, held back from the last piece.
    held: Vec<u8>,
}

impl Matcher {
    /// A matcher for `patterns` (not empty, none empty).
    pub fn new(patterns: Patterns, once: bool) -> Matcher {
        let min = patterns
            .iter()
            .map(|(p, _)| p.len())
            .min()
            .unwrap_or(1)
            .max(1);
        let n = patterns.len();
        Matcher {
            patterns,
            min,
            once,
            applied: vec![false; n],
            applied_count: 0,
            done: false,
            held: Vec::new(),
        }
    }

    /// The pair index of pattern `i`.
    pub fn pair(&self, i: usize) -> usize {
        self.patterns[i].1
    }

    /// Scans `piece` (after what is held), appending what it decides.
    pub fn feed(&mut self, piece: &Bytes, out: &mut Vec<Piece>) {
        let held = std::mem::take(&mut self.held);
        let h = held.len();
        let total = h + piece.len();
        let at = |i: usize| -> u8 { if i < h { held[i] } else { piece[i - h] } };
        // Text `a..b` of the held bytes and the piece.
        let emit = |a: usize, b: usize, out: &mut Vec<Piece>| {
            if a >= b {
                return;
            }
            if a < h {
                out.push(Piece::Text(Bytes::copy_from_slice(&held[a..b.min(h)])));
            }
            if b > h {
                out.push(Piece::Text(piece.slice(a.max(h) - h..b - h)));
            }
        };
        let mut emitted = 0;
        let mut s = 0;
        if self.done {
            emit(0, total, out);
            return;
        }
        while s + self.min <= total {
            let c = at(s + self.min - 1).to_ascii_lowercase();
            let mut partial = false;
            let mut found = None;
            for (i, (p, _)) in self.patterns.iter().enumerate() {
                if p[self.min - 1] != c || (self.once && self.applied[i]) {
                    continue;
                }
                let mut k = 0;
                while k < p.len() && s + k < total && at(s + k).to_ascii_lowercase() == p[k] {
                    k += 1;
                }
                if k == p.len() {
                    found = Some(i);
                    break;
                }
                if s + k == total {
                    // It may go on in the next piece: wait for it.
                    partial = true;
                    break;
                }
            }
            if partial {
                break;
            }
            let Some(i) = found else {
                s += 1;
                continue;
            };
            emit(emitted, s, out);
            out.push(Piece::Replace(i));
            s += self.patterns[i].0.len();
            emitted = s;
            if self.once {
                self.applied[i] = true;
                self.applied_count += 1;
                if self.applied_count == self.patterns.len() {
                    self.done = true;
                    emit(s, total, out);
                    return;
                }
            }
        }
        emit(emitted, s, out);
        self.held = (s..total).map(at).collect();
    }

    /// A piece that is to reach the client at once (unbuffered proxying,
    /// nginx's flush): what is held goes out up to the first byte where
    /// some string may begin and go on into the next piece.
    pub fn flush(&mut self, out: &mut Vec<Piece>) {
        let held = &self.held;
        let keep_from = (0..held.len())
            .find(|&s| {
                let rest = &held[s..];
                self.patterns.iter().any(|(p, _)| {
                    p.len() > rest.len()
                        && rest
                            .iter()
                            .zip(p)
                            .all(|(c, pc)| c.to_ascii_lowercase() == *pc)
                })
            })
            .unwrap_or(held.len());
        if keep_from > 0 {
            let rest = self.held.split_off(keep_from);
            let released = std::mem::replace(&mut self.held, rest);
            out.push(Piece::Text(Bytes::from(released)));
        }
    }

    /// The end of the body: what is held goes out as it is.
    pub fn finish(&mut self, out: &mut Vec<Piece>) {
        if !self.held.is_empty() {
            out.push(Piece::Text(Bytes::from(std::mem::take(&mut self.held))));
        }
    }
}

/// The body part: a [`Source`] over a request's body.
pub struct SubFilter<'r, 'a> {
    /// The request (its replacements' variables).
    r: &'r Req<'a>,
    /// The body being filtered.
    input: Box<dyn Source + 'r>,
    /// The matching state.
    matcher: Matcher,
    /// Replacements evaluated so far, by pair index.
    values: Vec<Option<Bytes>>,
    /// What was decided and not yet taken.
    out: VecDeque<Bytes>,
    /// The body has ended.
    ended: bool,
}

impl<'r, 'a: 'r> SubFilter<'r, 'a> {
    /// The filter over `input` for `r`, with the strings its head chose.
    pub fn new(r: &'r Req<'a>, input: Box<dyn Source + 'r>, patterns: Patterns) -> Self {
        let pairs = r.conf.sub_filter.len();
        SubFilter {
            r,
            input,
            matcher: Matcher::new(patterns, r.conf.sub_filter_once),
            values: vec![None; pairs],
            out: VecDeque::new(),
            ended: false,
        }
    }

    /// Queues what the matcher found, replacements evaluated.
    fn queue(&mut self, pieces: Vec<Piece>) {
        for p in pieces {
            let b = match p {
                Piece::Text(b) => b,
                Piece::Replace(i) => {
                    let pair = self.matcher.pair(i);
                    let r = self.r;
                    self.values[pair]
                        .get_or_insert_with(|| Bytes::from(r.expand(&r.conf.sub_filter[pair].1)))
                        .clone()
                }
            };
            if !b.is_empty() {
                self.out.push_back(b);
            }
        }
    }
}

impl<'r, 'a: 'r> Source for SubFilter<'r, 'a> {
    fn poll_chunk(&mut self, cx: &mut Context<'_>) -> Poll<Result<Option<Bytes>, SourceError>> {
        loop {
            if !self.out.is_empty() {
                // What one piece became goes on as one piece (nginx passes
                // it on as one chain: one chunk to the client).
                return Poll::Ready(Ok(Some(join(&mut self.out))));
            }
            if self.ended {
                return Poll::Ready(Ok(None));
            }
            let mut pieces = Vec::new();
            match std::task::ready!(self.input.poll_chunk(cx))? {
                Some(b) => {
                    self.matcher.feed(&b, &mut pieces);
                    if self.input.flushes() {
                        self.matcher.flush(&mut pieces);
                    }
                }
                None => {
                    self.matcher.finish(&mut pieces);
                    self.ended = true;
                }
            }
            self.queue(pieces);
        }
    }

    fn length(&self) -> Option<u64> {
        None
    }

    fn received(&self) -> u64 {
        self.input.received()
    }

    fn flushes(&self) -> bool {
        self.input.flushes()
    }
}

/// Takes every piece of `out` as one.
pub fn join(out: &mut VecDeque<Bytes>) -> Bytes {
    if out.len() == 1 {
        return out.pop_front().unwrap_or_default();
    }
    let mut all = Vec::with_capacity(out.iter().map(Bytes::len).sum());
    for b in out.drain(..) {
        all.extend_from_slice(&b);
    }
    Bytes::from(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `pieces` become with `patterns` replaced by `[i]`.
    fn run(patterns: &[&str], once: bool, pieces: &[&str]) -> String {
        let p: Vec<(Vec<u8>, usize)> = patterns
            .iter()
            .enumerate()
            .map(|(i, s)| (s.to_ascii_lowercase().into_bytes(), i))
            .collect();
        let mut m = Matcher::new(Rc::new(p), once);
        let mut out = Vec::new();
        for piece in pieces {
            m.feed(&Bytes::copy_from_slice(piece.as_bytes()), &mut out);
        }
        m.finish(&mut out);
        out.iter()
            .map(|p| match p {
                Piece::Text(b) => String::from_utf8_lossy(b).into_owned(),
                Piece::Replace(i) => format!("[{}]", m.pair(*i)),
            })
            .collect()
    }

    /// `run` with every cut of `text` in two.
    fn every_cut(patterns: &[&str], once: bool, text: &str) -> String {
        let whole = run(patterns, once, &[text]);
        for cut in 1..text.len() {
            assert_eq!(
                run(patterns, once, &[&text[..cut], &text[cut..]]),
                whole,
                "{text:?} cut at {cut}"
            );
        }
        whole
    }

    #[test]
    fn nginx_s_cases() {
        assert_eq!(every_cut(&["foo"], true, "foofoo"), "[0]foo");
        assert_eq!(every_cut(&["foo"], false, "foofoo"), "[0][0]");
        assert_eq!(every_cut(&["foo"], false, "FoO"), "[0]");
        assert_eq!(every_cut(&["foo"], false, "foofo"), "[0]fo");
        assert_eq!(every_cut(&["abac"], true, "abaabac"), "aba[0]");
        assert_eq!(every_cut(&["ababX"], true, "abababX"), "ab[0]");
        assert_eq!(every_cut(&["aab"], true, "aaaab"), "aa[0]");
        assert_eq!(every_cut(&["A"], false, "CAAC"), "C[0][0]C");
        assert_eq!(every_cut(&["A"], true, "CAAC"), "C[0]AC");
    }

    #[test]
    fn several_strings_first_written_wins_at_a_position() {
        assert_eq!(every_cut(&["aab", "yyz"], false, "aabyyzaab"), "[0][1][0]");
        assert_eq!(every_cut(&["aabb", "aaabb"], false, "aaabb"), "[1]");
        assert_eq!(every_cut(&["ab", "abcd"], false, "abcd"), "[0]cd");
        assert_eq!(every_cut(&["abcd", "ab"], false, "abcd"), "[0]");
        // Once each: the second `aab` stays.
        assert_eq!(every_cut(&["aab", "yyz"], true, "aabaabyyz"), "[0]aab[1]");
    }

    #[test]
    fn a_flush_releases_what_cannot_begin_a_string() {
        let p: Vec<(Vec<u8>, usize)> = vec![(b"za".to_vec(), 0), (b"xyq".to_vec(), 1)];
        let mut m = Matcher::new(Rc::new(p), false);
        let mut out = Vec::new();
        m.feed(&Bytes::from_static(b"abz"), &mut out);
        m.flush(&mut out);
        // `z` may begin `za`: it waits.
        assert_eq!(out, vec![Piece::Text(Bytes::from_static(b"ab"))]);
        let mut out = Vec::new();
        m.feed(&Bytes::from_static(b"bxy"), &mut out);
        m.flush(&mut out);
        // `xy` begins `xyq`: it waits; `z` did not begin `za` after all.
        let text: Vec<u8> = out
            .iter()
            .flat_map(|p| match p {
                Piece::Text(b) => b.to_vec(),
                Piece::Replace(_) => b"[]".to_vec(),
            })
            .collect();
        assert_eq!(text, b"zb");
    }

    #[test]
    fn a_string_cut_by_the_end_of_the_body_stays() {
        // `abcd` might start at `a`: at the end, `abc` goes out as it is
        // and `bc` inside it is not looked at, as nginx does.
        assert_eq!(run(&["abcd", "bc"], false, &["xabc"]), "xabc");
    }
}
