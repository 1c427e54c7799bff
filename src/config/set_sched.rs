//! `worker_priority` and `worker_cpu_affinity`: how the workers' threads are
//! scheduled. Parsed as nginx's `ngx_set_priority` and `ngx_set_cpu_affinity`
//! parse them, with their messages; a worker's CPUs are chosen as
//! `ngx_get_cpu_affinity` chooses them. Only values and choices here: the
//! process layer applies them on each worker thread (`process::sched`).

use super::build::{Builder, Scope};
use super::set_core::main_set;
use super::syntax::Directive;

/// The most CPUs a mask may name: glibc's `CPU_SETSIZE`, as nginx's message
/// says.
pub const CPU_SETSIZE: usize = 1024;

/// The CPUs one `worker_cpu_affinity` mask names, in increasing order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CpuMask(pub Vec<usize>);

/// `worker_cpu_affinity`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CpuAffinity {
    /// `cpumask ...`: worker N takes the N-th mask, the last mask serving
    /// every worker past the list.
    Masks(Vec<CpuMask>),
    /// `auto [cpumask]`: one CPU per worker, in turn, from the mask, or from
    /// the CPUs the process may use when there is none.
    Auto(Option<CpuMask>),
}

impl CpuAffinity {
    /// The CPUs worker `index` (from 0) is bound to; `available` is the
    /// CPUs the process may use, for `auto` without a mask. `None` leaves
    /// the worker unbound: nginx's answer to an `auto` mask with no CPU.
    ///
    /// nginx's `auto` default is CPUs 0 to the online count − 1; the CPUs
    /// the process may use are the same set on a machine without cpusets,
    /// and the right one in a container or under `taskset`, where binding
    /// to a CPU outside it fails.
    pub fn for_worker(&self, index: usize, available: &[usize]) -> Option<Vec<usize>> {
        match self {
            CpuAffinity::Masks(masks) => {
                let mask = masks.get(index).or(masks.last())?;
                Some(mask.0.clone())
            }
            CpuAffinity::Auto(mask) => {
                let cpus = mask.as_ref().map_or(available, |m| &m.0);
                // The index-th CPU of the mask, counting round it again
                // when there are more workers than CPUs.
                let cpu = *cpus.get(index % cpus.len().max(1))?;
                Some(vec![cpu])
            }
        }
    }

    /// The masks written, when nginx warns that their number and the
    /// workers' differ: not for `auto`, nor for one mask (which serves
    /// every worker), nor for one per worker.
    pub fn masks_against(&self, workers: usize) -> Option<usize> {
        match self {
            CpuAffinity::Masks(m) if m.len() != 1 && m.len() != workers => Some(m.len()),
            _ => None,
        }
    }
}

/// nginx's warning when [`CpuAffinity::masks_against`] finds a difference.
pub const MASK_COUNT_WARNING: &str = "the number of \"worker_processes\" is not equal to the number of \"worker_cpu_affinity\" masks, using last mask for remaining worker processes";

/// `worker_priority number;`: a nice value, with an optional sign.
///
/// As nginx, any number is taken (the kernel clamps it to -20..19 when it
/// is applied), and only a non-zero earlier value makes a repeat a
/// duplicate: nginx's test is `priority != 0`. A number too large for a C
/// `int` is refused; nginx truncates it, refusing some and mangling others.
pub fn worker_priority(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let m = main_set(scope);
    if m.worker_priority.is_some_and(|p| p != 0) {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let v = d.arg(0);
    let (minus, digits) = match v.as_bytes().first() {
        Some(b'-') => (true, &v[1..]),
        Some(b'+') => (false, &v[1..]),
        _ => (false, v),
    };
    let n = super::value::number(digits)
        .and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| format!("\"{}\" directive invalid number", d.name))?;
    m.worker_priority = Some(if minus { -n } else { n });
    Ok(())
}

/// `worker_cpu_affinity cpumask ...;` or `worker_cpu_affinity auto
/// [cpumask];`. A mask is binary, its rightmost digit CPU 0; spaces inside
/// a quoted mask are skipped.
pub fn worker_cpu_affinity(
    _: &mut Builder,
    scope: &mut Scope<'_>,
    d: &Directive,
) -> Result<(), String> {
    let m = main_set(scope);
    if m.worker_cpu_affinity.is_some() {
        return Err(format!("\"{}\" directive is duplicate", d.name));
    }
    let args: Vec<&str> = d.args.iter().map(|w| w.value.as_str()).collect();
    let v = match args.split_first() {
        Some((&"auto", rest)) => {
            if rest.len() > 1 {
                return Err(format!(
                    "invalid number of arguments in \"{}\" directive",
                    d.name
                ));
            }
            CpuAffinity::Auto(rest.first().map(|s| mask(s)).transpose()?)
        }
        _ => CpuAffinity::Masks(args.iter().map(|s| mask(s)).collect::<Result<_, _>>()?),
    };
    m.worker_cpu_affinity = Some(v);
    Ok(())
}

/// One mask, read from its right end as nginx does: so of several bad
/// characters the message names the last.
fn mask(s: &str) -> Result<CpuMask, String> {
    // nginx measures the mask as written, spaces included.
    if s.len() > CPU_SETSIZE {
        return Err(format!(
            "\"worker_cpu_affinity\" supports up to {CPU_SETSIZE} CPUs only"
        ));
    }
    let mut cpus = Vec::new();
    let mut cpu = 0;
    for c in s.chars().rev() {
        match c {
            ' ' => continue,
            '0' => {}
            '1' => cpus.push(cpu),
            c => {
                return Err(format!(
                    "invalid character \"{c}\" in \"worker_cpu_affinity\""
                ));
            }
        }
        cpu += 1;
    }
    Ok(CpuMask(cpus))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_text;

    /// The main conf of `main` (plus an empty `events`), or every message.
    fn load_main(main: &str) -> Result<crate::config::model::MainConf, Vec<String>> {
        match load_text(&format!("{main}\nevents {{}}\n")) {
            Ok(l) => Ok(l.config.main),
            Err(e) => Err(e.iter().map(|e| e.to_string()).collect()),
        }
    }

    fn error(main: &str) -> String {
        let e = load_main(main).unwrap_err();
        assert_eq!(e.len(), 1, "{e:?}");
        e[0].split(" in /").next().unwrap().to_string()
    }

    #[test]
    fn priorities_take_a_sign() {
        let p = |s: &str| load_main(s).unwrap().worker_priority;
        assert_eq!(p("worker_priority 5;"), Some(5));
        assert_eq!(p("worker_priority +5;"), Some(5));
        assert_eq!(p("worker_priority -20;"), Some(-20));
        // Out of the nice range, taken as nginx takes it: clamped when set.
        assert_eq!(p("worker_priority 100;"), Some(100));
        // 0 sets nothing, as nginx's unset value.
        assert_eq!(p("worker_priority 0;"), None);
        assert_eq!(p("worker_priority -0;"), None);
        assert_eq!(p(""), None);
    }

    #[test]
    fn bad_priorities_have_nginx_messages() {
        for v in [
            "abc",
            "-",
            "+",
            "+-5",
            "--1",
            "1.5",
            "\"\"",
            "99999999999999999999",
        ] {
            assert_eq!(
                error(&format!("worker_priority {v};")),
                "\"worker_priority\" directive invalid number",
                "{v}"
            );
        }
        assert_eq!(
            error("worker_priority 5; worker_priority 3;"),
            "\"worker_priority\" directive is duplicate"
        );
        assert_eq!(
            error("worker_priority;"),
            "invalid number of arguments in \"worker_priority\" directive"
        );
    }

    #[test]
    fn a_zero_priority_is_not_a_duplicate() {
        // nginx's duplicate test is `priority != 0`.
        let m = load_main("worker_priority 0; worker_priority 5;").unwrap();
        assert_eq!(m.worker_priority, Some(5));
    }

    #[test]
    fn masks_read_from_the_right() {
        let a = |s: &str| load_main(s).unwrap().worker_cpu_affinity;
        let masks = |v: &[&[usize]]| {
            Some(CpuAffinity::Masks(
                v.iter().map(|c| CpuMask(c.to_vec())).collect(),
            ))
        };
        assert_eq!(a(""), None);
        assert_eq!(
            a("worker_processes 2; worker_cpu_affinity 01 10;"),
            masks(&[&[0], &[1]])
        );
        assert_eq!(
            a("worker_cpu_affinity 0101 \"1 0 1 0\";"),
            masks(&[&[0, 2], &[1, 3]])
        );
        // An empty mask is valid; binding to it fails when applied.
        assert_eq!(a("worker_cpu_affinity 0000;"), masks(&[&[]]));
        assert_eq!(
            a("worker_cpu_affinity auto;"),
            Some(CpuAffinity::Auto(None))
        );
        assert_eq!(
            a("worker_cpu_affinity auto 1010;"),
            Some(CpuAffinity::Auto(Some(CpuMask(vec![1, 3]))))
        );
        let longest = format!("worker_cpu_affinity 1{};", "0".repeat(CPU_SETSIZE - 1));
        assert_eq!(a(&longest), masks(&[&[CPU_SETSIZE - 1]]));
    }

    #[test]
    fn bad_masks_have_nginx_messages() {
        assert_eq!(
            error("worker_cpu_affinity 0x1y;"),
            "invalid character \"y\" in \"worker_cpu_affinity\""
        );
        assert_eq!(
            error("worker_cpu_affinity 2;"),
            "invalid character \"2\" in \"worker_cpu_affinity\""
        );
        // "auto" only first: elsewhere it is a mask, read from its end.
        assert_eq!(
            error("worker_cpu_affinity 01 auto;"),
            "invalid character \"o\" in \"worker_cpu_affinity\""
        );
        assert_eq!(
            error("worker_cpu_affinity auto 01 10;"),
            "invalid number of arguments in \"worker_cpu_affinity\" directive"
        );
        assert_eq!(
            error("worker_cpu_affinity auto auto;"),
            "invalid character \"o\" in \"worker_cpu_affinity\""
        );
        assert_eq!(
            error(&format!(
                "worker_cpu_affinity {};",
                "0".repeat(CPU_SETSIZE + 1)
            )),
            "\"worker_cpu_affinity\" supports up to 1024 CPUs only"
        );
        assert_eq!(
            error("worker_cpu_affinity 01; worker_cpu_affinity 10;"),
            "\"worker_cpu_affinity\" directive is duplicate"
        );
        assert_eq!(
            error("worker_cpu_affinity;"),
            "invalid number of arguments in \"worker_cpu_affinity\" directive"
        );
        assert_eq!(
            error("http { worker_cpu_affinity 1; }"),
            "\"worker_cpu_affinity\" directive is not allowed here"
        );
    }

    #[test]
    fn the_last_mask_serves_the_remaining_workers() {
        let a = CpuAffinity::Masks(vec![CpuMask(vec![0]), CpuMask(vec![1, 2])]);
        let all = [0, 1, 2, 3];
        assert_eq!(a.for_worker(0, &all), Some(vec![0]));
        assert_eq!(a.for_worker(1, &all), Some(vec![1, 2]));
        assert_eq!(a.for_worker(5, &all), Some(vec![1, 2]));
        assert_eq!(a.masks_against(2), None);
        assert_eq!(a.masks_against(4), Some(2));
        assert_eq!(
            CpuAffinity::Masks(vec![CpuMask(vec![0])]).masks_against(4),
            None
        );
    }

    #[test]
    fn auto_takes_one_cpu_each_in_turn() {
        let auto = CpuAffinity::Auto(None);
        let available = [2, 3];
        let got: Vec<_> = (0..5).map(|i| auto.for_worker(i, &available)).collect();
        assert_eq!(
            got,
            [
                Some(vec![2]),
                Some(vec![3]),
                Some(vec![2]),
                Some(vec![3]),
                Some(vec![2])
            ]
        );
        // A mask restricts the choice, whatever the process may use.
        let masked = CpuAffinity::Auto(Some(CpuMask(vec![0, 5])));
        assert_eq!(masked.for_worker(1, &available), Some(vec![5]));
        assert_eq!(masked.for_worker(2, &available), Some(vec![0]));
        // An empty mask binds nothing.
        assert_eq!(
            CpuAffinity::Auto(Some(CpuMask(vec![]))).for_worker(0, &available),
            None
        );
        assert_eq!(auto.masks_against(7), None);
    }

    #[test]
    fn masks_and_workers_in_different_numbers_warn() {
        let warned = |main: &str| {
            let got = load_text(&format!("{main}\nevents {{}}\n")).unwrap();
            got.warnings
                .iter()
                .any(|w| w.message == MASK_COUNT_WARNING && w.loc.is_none())
        };
        assert!(warned("worker_cpu_affinity 01 10;"));
        assert!(warned("worker_processes 2; worker_cpu_affinity 01 10 01;"));
        assert!(!warned("worker_processes 2; worker_cpu_affinity 01 10;"));
        assert!(!warned("worker_processes 3; worker_cpu_affinity 01;"));
        assert!(!warned("worker_processes 3; worker_cpu_affinity auto 01;"));
    }
}
