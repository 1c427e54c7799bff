//! `split_clients`' choice of a part, as nginx's
//! `ngx_http_split_clients_module.c` makes it: the 32-bit MurmurHash2 of the
//! evaluated string is compared with each part's cumulative bound
//! (`percent * 0xffffffff / 10000`, percent in hundredths), and the first
//! part whose bound exceeds it wins; `*` takes whatever reaches it.
//!
//! Parsing the block and evaluating the string are the configuration
//! layer's and the variables'; this module owns only the arithmetic, and
//! [`parse_percent`] so that `33.3%` means what nginx makes of it.

use std::fmt;

/// A whole: percentages are in hundredths, 100% is 10000.
pub const PERCENT_SCALE: u32 = 10_000;
/// The number of decimal places a percentage may have (nginx's
/// `ngx_atofp(…, 2)`).
const PERCENT_DECIMALS: u32 = 2;
/// MurmurHash2's multiplier.
const MURMUR_M: u32 = 0x5bd1_e995;

/// nginx's `ngx_murmur_hash2`: MurmurHash2, 32-bit, seed 0, little-endian
/// words.
pub fn murmur_hash2(data: &[u8]) -> u32 {
    // nginx seeds with the length as a 32-bit value.
    let mut h: u32 = data.len() as u32;
    let mut words = data.chunks_exact(4);
    for w in &mut words {
        let mut k = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        k = k.wrapping_mul(MURMUR_M);
        k ^= k >> 24;
        k = k.wrapping_mul(MURMUR_M);
        h = h.wrapping_mul(MURMUR_M);
        h ^= k;
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(MURMUR_M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(MURMUR_M);
    h ^= h >> 15;
    h
}

/// A part's percentage in hundredths from its text with the `%` (`33.3%`
/// → 3330), as nginx reads it: digits with at most one dot and two decimal
/// places, not zero. `None` is nginx's `invalid percent value "…"`. `*` is
/// not a percentage: it is the part with 0 in [`SplitClients::new`].
pub fn parse_percent(text: &str) -> Option<u32> {
    let digits = text.strip_suffix('%')?;
    if digits.is_empty() {
        return None;
    }
    let mut value: i64 = 0;
    let mut point = PERCENT_DECIMALS;
    let mut dot = false;
    for c in digits.bytes() {
        if point == 0 {
            return None;
        }
        if c == b'.' {
            if dot {
                return None;
            }
            dot = true;
            continue;
        }
        if !c.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
        if dot {
            point -= 1;
        }
    }
    for _ in 0..point {
        value = value.checked_mul(10)?;
    }
    if value == 0 {
        return None;
    }
    // nginx stores the value in 32 bits without a check; a huge percentage
    // wraps (and is then almost always over 100% in total).
    Some(value as u32)
}

/// The parts of a `split_clients` block, ready to choose from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitClients {
    /// Each part's cumulative bound on the hash; 0 for `*`.
    bounds: Vec<u32>,
}

/// Why the parts cannot be used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// The percentages add up to more than 100% (`*` counts as the rest).
    Over100,
}

impl fmt::Display for SplitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SplitError::Over100 => write!(f, "percent total is greater than 100%"),
        }
    }
}

impl std::error::Error for SplitError {}

impl SplitClients {
    /// The parts with percentages `percents` in hundredths, in the block's
    /// order, 0 standing for `*`.
    pub fn new(percents: &[u32]) -> Result<SplitClients, SplitError> {
        let mut sum: u32 = 0;
        let mut last: u32 = 0;
        let mut bounds = Vec::with_capacity(percents.len());
        for &percent in percents {
            sum = if percent == 0 {
                PERCENT_SCALE
            } else {
                sum.wrapping_add(percent)
            };
            if sum > PERCENT_SCALE {
                return Err(SplitError::Over100);
            }
            if percent == 0 {
                bounds.push(0);
            } else {
                let share = u64::from(percent) * u64::from(u32::MAX) / u64::from(PERCENT_SCALE);
                last = last.wrapping_add(share as u32);
                bounds.push(last);
            }
        }
        Ok(SplitClients { bounds })
    }

    /// The index of the part `key` falls in; `None` when the percentages
    /// do not reach its hash and there is no `*` (the variable is then
    /// empty).
    pub fn choose(&self, key: &[u8]) -> Option<usize> {
        let hash = murmur_hash2(key);
        self.bounds.iter().position(|&b| hash < b || b == 0)
    }
}

/// [`SplitClients::choose`] for parts given as in [`SplitClients::new`];
/// `None` also when they add up to more than 100%.
pub fn split_index(percents: &[u32], key: &[u8]) -> Option<usize> {
    SplitClients::new(percents).ok()?.choose(key)
}

#[cfg(test)]
mod tests;
