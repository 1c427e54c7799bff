//! Setters of the gzip family: the gzip filter's directives
//! (`ngx_http_gzip_filter_commands`), the four nginx keeps in its core
//! module (`gzip_vary`, `gzip_http_version`, `gzip_proxied`,
//! `gzip_disable`), `gzip_static` and `gunzip`.

use super::build::{Builder, Scope, set_flag};
use super::filter_model::{GZIP_DEFAULT_TYPES, GzipHttpVersion, GzipProxied, GzipStatic};
use super::inherit::RegexSource;
use super::set_proxy::{ls, not_set};
use super::slot;
use super::syntax::Directive;
use super::type_list;

/// The comp levels zlib has (`ngx_http_gzip_comp_level_bounds`).
pub const COMP_LEVELS: std::ops::RangeInclusive<u64> = 1..=9;

/// `gzip on | off;`
pub fn gzip(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).gzip, d)
}

/// `gzip_buffers number size;`
pub fn gzip_buffers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_buffers, d)?;
    set.gzip_buffers = Some(slot::bufs(d)?);
    Ok(())
}

/// `gzip_types mime-type ...;`
pub fn gzip_types(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    type_list::add(b, &mut ls(scope).gzip_types, d, GZIP_DEFAULT_TYPES[0])
}

/// `gzip_comp_level level;` (1..=9).
pub fn gzip_comp_level(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_comp_level, d)?;
    let n = slot::num(d, 0)?;
    if !COMP_LEVELS.contains(&n) {
        return Err(format!(
            "value must be between {} and {}",
            COMP_LEVELS.start(),
            COMP_LEVELS.end()
        ));
    }
    set.gzip_comp_level = Some(n as u32);
    Ok(())
}

/// A power of two between 512 and `max` as its bits counted from
/// `max_bits` down (`ngx_http_gzip_window`, `ngx_http_gzip_hash`).
fn power_of_two(size: u64, max: u64, max_bits: u8) -> Option<u8> {
    let mut bits = max_bits;
    let mut s = max;
    while s > 256 {
        if s == size {
            return Some(bits);
        }
        s >>= 1;
        bits -= 1;
    }
    None
}

/// `gzip_window size;` (512 … 32k).
pub fn gzip_window(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_window, d)?;
    let size = slot::size(d, 0)?;
    let bits = power_of_two(size, 32 * 1024, 15).ok_or_else(|| {
        format!(
            "\"{}\" directive must be 512, 1k, 2k, 4k, 8k, 16k, or 32k",
            d.name
        )
    })?;
    set.gzip_window = Some(bits);
    Ok(())
}

/// `gzip_hash size;` (512 … 128k).
pub fn gzip_hash(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_hash, d)?;
    let size = slot::size(d, 0)?;
    let level = power_of_two(size, 128 * 1024, 9).ok_or_else(|| {
        format!(
            "\"{}\" directive must be 512, 1k, 2k, 4k, 8k, 16k, 32k, 64k, or 128k",
            d.name
        )
    })?;
    set.gzip_hash = Some(level);
    Ok(())
}

/// `postpone_gzipping size;`
pub fn postpone_gzipping(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.postpone_gzipping, d)?;
    set.postpone_gzipping = Some(slot::size(d, 0)?);
    Ok(())
}

/// `gzip_no_buffer on | off;`
pub fn gzip_no_buffer(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).gzip_no_buffer, d)
}

/// `gzip_min_length length;`
pub fn gzip_min_length(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_min_length, d)?;
    set.gzip_min_length = Some(slot::size(d, 0)?);
    Ok(())
}

/// `gzip_vary on | off;`
pub fn gzip_vary(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).gzip_vary, d)
}

/// `gzip_http_version 1.0 | 1.1;`
pub fn gzip_http_version(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_http_version, d)?;
    set.gzip_http_version = Some(slot::enumerated(
        d,
        &[("1.0", GzipHttpVersion::V10), ("1.1", GzipHttpVersion::V11)],
    )?);
    Ok(())
}

/// `gzip_proxied off | expired | no-cache | … | any ...;`: a bit mask;
/// repeated directives of one level add to it.
pub fn gzip_proxied(b: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let names: Vec<&str> = GzipProxied::NAMES.iter().map(|(n, _)| *n).collect();
    let set = ls(scope);
    let mut seen: Vec<usize> = GzipProxied::NAMES
        .iter()
        .enumerate()
        .filter(|(_, (_, bit))| set.gzip_proxied.is_some_and(|p| p.contains(*bit)))
        .map(|(i, _)| i)
        .collect();
    slot::bitmask(b, d, &names, &mut seen)?;
    let mask = seen.iter().fold(0, |m, &i| m | GzipProxied::NAMES[i].1.0);
    ls(scope).gzip_proxied = Some(GzipProxied(mask));
    Ok(())
}

/// `gzip_disable regex ...;`: `msie6` is MSIE 4–6; anything else a
/// case-insensitive expression tried on `User-Agent`. Repeated directives
/// of one level add to the list.
pub fn gzip_disable(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    let list = set.gzip_disable.get_or_insert_with(Vec::new);
    for w in &d.args {
        if w.value == "msie6" {
            set.gzip_disable_msie6 = Some(true);
            continue;
        }
        let re = super::regex::compile(&w.value, true)?;
        list.push(RegexSource {
            source: w.value.clone(),
            re,
        });
    }
    Ok(())
}

/// `gzip_static on | off | always;`
pub fn gzip_static(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gzip_static, d)?;
    set.gzip_static = Some(slot::enumerated(
        d,
        &[
            ("off", GzipStatic::Off),
            ("on", GzipStatic::On),
            ("always", GzipStatic::Always),
        ],
    )?);
    Ok(())
}

/// `gunzip on | off;`
pub fn gunzip(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    set_flag(&mut ls(scope).gunzip, d)
}

/// `gunzip_buffers number size;`
pub fn gunzip_buffers(_: &mut Builder, scope: &mut Scope<'_>, d: &Directive) -> Result<(), String> {
    let set = ls(scope);
    not_set(&set.gunzip_buffers, d)?;
    set.gunzip_buffers = Some(slot::bufs(d)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_and_hash_sizes_as_nginx() {
        assert_eq!(power_of_two(32 * 1024, 32 * 1024, 15), Some(15));
        assert_eq!(power_of_two(512, 32 * 1024, 15), Some(9));
        assert_eq!(power_of_two(256, 32 * 1024, 15), None);
        assert_eq!(power_of_two(3000, 32 * 1024, 15), None);
        assert_eq!(power_of_two(128 * 1024, 128 * 1024, 9), Some(9));
        assert_eq!(power_of_two(512, 128 * 1024, 9), Some(1));
    }
}
