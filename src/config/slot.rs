//! nginx's generic value slots (`ngx_conf_set_size_slot`,
//! `ngx_conf_set_msec_slot`, `…_num_slot`, `…_enum_slot`, `…_bitmask_slot`,
//! `…_bufs_slot`, `…_path_slot`), each with the exact words nginx prints.
//!
//! A slot that fails returns a short text and nginx prints it after the
//! directive's name (`"proxy_buffer_size" directive invalid value`); others
//! word their own message (`invalid value "x"`). These functions return
//! the whole message; the loader adds ` in FILE:LINE`. They only parse: the
//! setters decide where a value goes.

use std::time::Duration;

use super::build::Builder;
use super::dirs::DirUse;
use super::syntax::Directive;
use super::value;
use crate::io::temp::TempPath;

/// The most subdirectory levels a temp path may have (`NGX_MAX_PATH_LEVEL`).
pub const MAX_PATH_LEVELS: usize = 3;
/// The most digits all levels of a temp path may take together.
pub const MAX_PATH_LEVEL_DIGITS: u64 = 10;

/// `"NAME" directive invalid value`: what a size, time, path or buffers
/// slot says about a bad value.
pub fn invalid_value(d: &Directive) -> String {
    format!("\"{}\" directive invalid value", d.name)
}

/// `"NAME" directive invalid number`: what a number slot says.
pub fn invalid_number(d: &Directive) -> String {
    format!("\"{}\" directive invalid number", d.name)
}

/// A size argument (`ngx_conf_set_size_slot`).
pub fn size(d: &Directive, i: usize) -> Result<u64, String> {
    value::size(d.arg(i)).ok_or_else(|| invalid_value(d))
}

/// Parses a time in milliseconds as `ngx_parse_time(…, 0)`: every unit but
/// years and months (`ms s m h d w`).
pub fn msec_value(s: &str) -> Option<Duration> {
    if s.contains(['y', 'M']) {
        return None;
    }
    value::time(s, true)
}

/// A time argument of a millisecond slot (`ngx_conf_set_msec_slot`).
pub fn msec(d: &Directive, i: usize) -> Result<Duration, String> {
    msec_value(d.arg(i)).ok_or_else(|| invalid_value(d))
}

/// A number argument (`ngx_conf_set_num_slot`).
pub fn num(d: &Directive, i: usize) -> Result<u64, String> {
    value::number(d.arg(i)).ok_or_else(|| invalid_number(d))
}

/// A number argument narrowed to `u32`: larger values count as the largest
/// (nginx keeps them in a machine word; none of them means more than this).
pub fn num_u32(d: &Directive, i: usize) -> Result<u32, String> {
    Ok(u32::try_from(num(d, i)?).unwrap_or(u32::MAX))
}

/// One of `choices`, compared case-insensitively (`ngx_conf_set_enum_slot`):
/// `invalid value "x"`.
pub fn enumerated<T: Copy>(d: &Directive, choices: &[(&str, T)]) -> Result<T, String> {
    let v = d.arg(0);
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(v))
        .map(|&(_, t)| t)
        .ok_or_else(|| format!("invalid value \"{v}\""))
}

/// The index in `names` of every argument, compared case-insensitively
/// (`ngx_conf_set_bitmask_slot`): an unknown one is `invalid value "x"`;
/// one already in `seen` (or repeated) is warned about as nginx does
/// (`duplicate value "x"`) and left out.
pub fn bitmask(
    b: &mut Builder,
    d: &Directive,
    names: &[&str],
    seen: &mut Vec<usize>,
) -> Result<(), String> {
    for w in &d.args {
        let v = w.value.as_str();
        let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(v)) else {
            return Err(format!("invalid value \"{v}\""));
        };
        if seen.contains(&i) {
            b.warn(format!("duplicate value \"{v}\""), &d.loc);
        } else {
            seen.push(i);
        }
    }
    Ok(())
}

/// `NUMBER SIZE` (`ngx_conf_set_bufs_slot`): both positive.
pub fn bufs(d: &Directive) -> Result<(u32, u64), String> {
    let n = match value::number(d.arg(0)) {
        Some(n @ 1..) => u32::try_from(n).map_err(|_| invalid_value(d))?,
        _ => return Err(invalid_value(d)),
    };
    match value::size(d.arg(1)) {
        Some(size @ 1..) => Ok((n, size)),
        _ => Err(invalid_value(d)),
    }
}

/// `path [level1 [level2 [level3]]]` (`ngx_conf_set_path_slot`): a trailing
/// `/` is dropped, the path made absolute against the prefix; levels are
/// positive digit counts, at most [`MAX_PATH_LEVEL_DIGITS`] in all. The
/// directory is recorded so that another use of it is checked.
pub fn path(b: &mut Builder, d: &Directive) -> Result<TempPath, String> {
    let mut p = d.arg(0);
    if p.len() > 1 {
        p = p.strip_suffix('/').unwrap_or(p);
    }
    let mut levels = Vec::new();
    let mut digits = 0;
    for w in d.args.iter().skip(1).take(MAX_PATH_LEVELS) {
        match value::number(&w.value) {
            Some(n @ 1..=MAX_PATH_LEVEL_DIGITS) => {
                digits += n;
                levels.push(n as u8);
            }
            _ => return Err(invalid_value(d)),
        }
    }
    if digits > MAX_PATH_LEVEL_DIGITS {
        return Err(invalid_value(d));
    }
    let path = b.full_path(p);
    b.dirs.add(&path, &levels, DirUse::Temp, &d.loc)?;
    Ok(TempPath { path, levels })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::lexer::Word;
    use crate::config::source::{Loc, Origin};

    fn dir(name: &str, args: &[&str]) -> Directive {
        Directive {
            name: name.into(),
            args: args
                .iter()
                .map(|a| Word {
                    value: a.to_string(),
                    quoted: false,
                })
                .collect(),
            block: None,
            loc: Loc {
                origin: Origin::CommandLine,
                line: 1,
            },
            end: None,
        }
    }

    #[test]
    fn msec_refuses_years_and_months() {
        assert_eq!(msec_value("1500ms"), Some(Duration::from_millis(1500)));
        assert_eq!(msec_value("1h 2m"), Some(Duration::from_secs(3720)));
        assert_eq!(msec_value("1y"), None);
        assert_eq!(msec_value("1M"), None);
        assert_eq!(
            msec(&dir("proxy_read_timeout", &["x"]), 0),
            Err("\"proxy_read_timeout\" directive invalid value".into())
        );
    }

    #[test]
    fn buffers_and_numbers() {
        assert_eq!(bufs(&dir("proxy_buffers", &["4", "8k"])), Ok((4, 8192)));
        for bad in [["0", "8k"], ["4", "0"], ["x", "8k"], ["4", "8x"]] {
            assert_eq!(
                bufs(&dir("proxy_buffers", &bad)),
                Err("\"proxy_buffers\" directive invalid value".into())
            );
        }
        assert_eq!(num_u32(&dir("n", &["99999999999"]), 0), Ok(u32::MAX));
        assert_eq!(
            num(&dir("n", &["-1"]), 0),
            Err("\"n\" directive invalid number".into())
        );
    }

    #[test]
    fn enums_ignore_case() {
        let choices = [("off", 0), ("on", 1), ("clean", 2)];
        assert_eq!(enumerated(&dir("x", &["CLEAN"]), &choices), Ok(2));
        assert_eq!(
            enumerated(&dir("x", &["maybe"]), &choices),
            Err("invalid value \"maybe\"".into())
        );
    }

    #[test]
    fn paths_as_nginx() {
        let mut b = Builder::new("/p".into());
        let t = path(&mut b, &dir("proxy_temp_path", &["tmp/", "1", "2"])).unwrap();
        assert_eq!(t.path, std::path::PathBuf::from("/p/tmp"));
        assert_eq!(t.levels, vec![1, 2]);
        assert_eq!(
            path(&mut b, &dir("proxy_temp_path", &["/t", "5", "5"]))
                .unwrap()
                .levels,
            vec![5, 5]
        );
        for bad in [&["/t", "0"][..], &["/t", "3", "4", "5"], &["/t", "x"]] {
            assert_eq!(
                path(&mut b, &dir("proxy_temp_path", bad)),
                Err("\"proxy_temp_path\" directive invalid value".into())
            );
        }
    }
}
