//! What nginx reads from `User-Agent` (`ngx_http_process_user_agent`): the
//! browser families `keepalive_disable`, `msie_padding` and `msie_refresh`
//! act on.
//!
//! Owns: the substring tests, exactly nginx's. Must not: decide anything
//! with them.

/// The families nginx tells apart.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Browser {
    /// `MSIE ` with at least two more characters, not Opera.
    pub msie: bool,
    /// MSIE 4, 5, or 6 without `SV1`.
    pub msie6: bool,
    /// Opera.
    pub opera: bool,
    /// `Gecko/`.
    pub gecko: bool,
    /// `Chrome/`.
    pub chrome: bool,
    /// `Safari/` on `Mac OS X` (not Chrome).
    pub safari: bool,
    /// `Konqueror`.
    pub konqueror: bool,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// Classifies a `User-Agent` value as nginx does.
pub fn classify(ua: &[u8]) -> Browser {
    let mut b = Browser::default();
    if let Some(i) = find(ua, b"MSIE ") {
        if i + 7 < ua.len() {
            b.msie = true;
            if ua[i + 6] == b'.' {
                match ua[i + 5] {
                    b'4' | b'5' => b.msie6 = true,
                    b'6' if find(&ua[i + 8..], b"SV1").is_none() => b.msie6 = true,
                    _ => {}
                }
            }
        }
    }
    if find(ua, b"Opera").is_some() {
        b.opera = true;
        b.msie = false;
        b.msie6 = false;
    }
    if !b.msie && !b.opera {
        if find(ua, b"Gecko/").is_some() {
            b.gecko = true;
        } else if find(ua, b"Chrome/").is_some() {
            b.chrome = true;
        } else if find(ua, b"Safari/").is_some() && find(ua, b"Mac OS X").is_some() {
            b.safari = true;
        } else if find(ua, b"Konqueror").is_some() {
            b.konqueror = true;
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn families_as_nginx_tells_them() {
        assert!(classify(b"MSIE 5.0").msie6);
        assert!(classify(b"MSIE 6.0; SV2").msie6);
        assert!(!classify(b"MSIE 6.0; SV1").msie6);
        assert!(!classify(b"MSIE 7.0").msie6);
        assert!(classify(b"MSIE 7.0").msie);
        // Too short after "MSIE ".
        assert!(!classify(b"MSIE 5").msie);
        assert!(classify(b"MSIE foo").msie);
        assert!(!classify(b"Opera MSIE 5.0").msie6);
        assert!(classify(b"Mac OS X Safari/7534.48.3").safari);
        assert!(!classify(b"Safari/7534.48.3").safari);
        assert!(!classify(b"Chrome/1 Mac OS X Safari/1").safari);
        assert!(classify(b"Gecko/2010").gecko);
    }
}
