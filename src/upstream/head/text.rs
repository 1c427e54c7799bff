//! The text of a response header field as a reply carries it: written by
//! nowait, or lent by an upstream's head without a copy.
//!
//! Owns: [`FieldText`], a string that is either owned or a slice of a
//! [`super::Headers`] list whose storage it shares.
//! Must not: interpret the text (it is a string, nothing more).

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use super::Fields;
use crate::http::response::ExtraField;

/// A header field's name or value: nowait's own text, or a part of an
/// upstream's header list, shared with it (the list is kept alive, not
/// copied: a proxied reply passes most of the upstream's fields on as they
/// came, and copying each name and value was most of the cost of turning
/// the upstream's head into a reply). Reads as a `&str`.
#[derive(Clone)]
pub struct FieldText(Repr);

/// Where a [`FieldText`]'s text lives.
#[derive(Clone)]
enum Repr {
    /// A name or value written in the code (`Accept-Ranges`).
    Static(&'static str),
    /// Text made for this reply (`add_header`, a rewritten `Location`).
    Owned(String),
    /// `start..end` of an upstream's sealed header list, which is text
    /// and has character boundaries there ([`super::Headers::shared_text`]
    /// makes sure of both).
    Shared {
        /// The list's storage.
        fields: Arc<Fields>,
        /// Where the text starts in it.
        start: u32,
        /// Where it ends.
        end: u32,
    },
}

impl FieldText {
    /// Bytes `start..end` of `fields`; the caller has checked that they are
    /// text with character boundaries there.
    pub(super) fn shared(fields: Arc<Fields>, start: u32, end: u32) -> FieldText {
        FieldText(Repr::Shared { fields, start, end })
    }

    /// The text.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Static(s) => s,
            Repr::Owned(s) => s,
            // Checked when made: `get` cannot fail (an empty string if it
            // ever did, rather than a panic).
            Repr::Shared { fields, start, end } => fields
                .bytes
                .text()
                .and_then(|t| t.get(*start as usize..*end as usize))
                .unwrap_or(""),
        }
    }

    /// Whether the text is an upstream's, which holds no CR or LF (its
    /// parser ends names and values at them).
    pub fn from_upstream(&self) -> bool {
        matches!(self.0, Repr::Shared { .. })
    }

    /// The text as an owned string (copied unless it was one).
    pub fn into_string(self) -> String {
        match self.0 {
            Repr::Owned(s) => s,
            _ => self.as_str().to_owned(),
        }
    }
}

/// A reply's field as its head writes it: one an upstream sent, name and
/// value, needs no scan for CR and LF.
impl ExtraField for (FieldText, FieldText) {
    fn name(&self) -> &str {
        self.0.as_str()
    }

    fn value(&self) -> &str {
        self.1.as_str()
    }

    fn clean(&self) -> bool {
        self.0.from_upstream() && self.1.from_upstream()
    }
}

impl Deref for FieldText {
    type Target = str;

    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for FieldText {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Default for FieldText {
    /// The empty text.
    fn default() -> FieldText {
        FieldText(Repr::Static(""))
    }
}

impl From<String> for FieldText {
    fn from(s: String) -> FieldText {
        FieldText(Repr::Owned(s))
    }
}

impl From<&'static str> for FieldText {
    fn from(s: &'static str) -> FieldText {
        FieldText(Repr::Static(s))
    }
}

/// Two texts are equal when they read the same, wherever they live.
impl PartialEq for FieldText {
    fn eq(&self, other: &FieldText) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for FieldText {}

impl PartialEq<str> for FieldText {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for FieldText {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl fmt::Debug for FieldText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for FieldText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::super::Headers;
    use super::*;

    #[test]
    fn shared_text_reads_as_the_field_and_outlives_the_list() {
        let mut h = Headers::default();
        h.push(b"X-A", b"1");
        h.push("X-\u{e9}".as_bytes(), "caf\u{e9}".as_bytes());
        h.seal();
        let (n, v) = h.shared_text(1).unwrap();
        drop(h);
        assert_eq!(n, "X-\u{e9}");
        assert_eq!(&*v, "caf\u{e9}");
        assert_eq!(v.clone().into_string(), "caf\u{e9}");
        assert_eq!(v, FieldText::from("caf\u{e9}".to_string()));
        assert_eq!(format!("{n}: {v:?}"), "X-\u{e9}: \"caf\u{e9}\"");
        // An upstream's field is written without a scan for CR and LF; one
        // with a part nowait made is scanned.
        assert!((n.clone(), v.clone()).clean());
        assert!(!(n, FieldText::from("x")).clean());
    }

    #[test]
    fn no_shared_text_for_a_list_that_is_not_text_or_not_sealed() {
        let mut h = Headers::default();
        h.push(b"X-A", b"1");
        assert!(h.shared_text(0).is_none(), "not sealed");
        h.seal();
        assert!(h.shared_text(0).is_some());
        assert!(h.shared_text(1).is_none(), "no such field");
        h.push(b"X-B", b"\xff");
        h.seal();
        assert!(h.shared_text(0).is_none(), "the list is not text");
        // A field splitting a character: the list is text, the field not.
        let mut h = Headers::default();
        h.push(b"X-\xc3", b"\xa9");
        h.seal();
        assert!(h.shared_text(0).is_none());
    }

    #[test]
    fn owned_and_static_text() {
        assert_eq!(FieldText::default(), "");
        assert_eq!(FieldText::from("bytes").into_string(), "bytes");
        let owned = FieldText::from("x".to_string());
        assert!(owned.eq_ignore_ascii_case("X"));
    }
}
