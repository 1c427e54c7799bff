"""The report: bench/results/<date>-<host>.md with every figure, the ratios
nowait/nginx, the targets met or missed, the machine's facts, and PNG plots
beside it (matplotlib, installed into the work directory if missing; the
report is written without plots if it cannot be had)."""

import importlib
import json
import os
import subprocess
import sys

import report_d
import report_hot

PCTS = ["p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99"]


def ms(s):
    return "—" if s is None else (f"{s * 1e3:.1f}" if s < 10 else f"{s * 1e3:.0f}")


def num(x, fmt="{:.1f}"):
    return "—" if x is None else fmt.format(x)


def ratio(a, b):
    if a is None or b is None:
        return "—"
    if b == 0:
        return "∞" if a > 0 else "—"
    v = a / b
    return f"{v:.2f}×" if v >= 0.01 else f"{v:.2g}×"


def find(runs, server, config, loaded):
    for r in runs:
        if r["server"] == server and r["config"] == config and r["loaded"] == loaded:
            return r
    return None


def lat(r, k):
    return (r.get("rate") or {}).get("latency_s", {}).get(k) if r else None


def closed(r):
    return (r.get("closed") or {}).get("req_per_s") if r else None


def dshare(r):
    s = r.get("loop_states")
    return "—" if not s or not s["samples"] else f"{s['share_D'] * 100:.0f}%"


def resident(r):
    s = r.get("loop_states") or {}
    lo, mean = s.get("hot_resident_min"), s.get("hot_resident_mean")
    return "—" if lo is None else f"{lo * 100:.0f}% / {mean * 100:.0f}%"


def us(s):
    """Seconds as microseconds for the loop-turn columns."""
    return "—" if s is None else f"{s * 1e6:.0f}"


def loop_turn_table(runs, lines):
    """nowait's loop turns (`nowait_loop_turn_seconds`: from the reactor's
    return to the next park, every turn measured), beside the per-poll and
    lag-probe columns of the table above. p99 is interpolated in its
    bucket; max is the server's own maximum (to 1%) where it exports one,
    else the upper bound of the highest bucket that holds a turn ("≤")."""
    rows = [r for r in runs if (r.get("status") or {}).get("turn_p99") is not None]
    if not rows:
        return
    lines += ["", "nowait's loop turns (every turn measured, worst worker; issue 12's target "
              "under load: p99 < 1 ms, max < 10 ms):", "",
              "| configuration | random load | turn p50 µs | turn p99 µs | turn max µs "
              "| poll p99 / max ms | lag p99 / max ms |",
              "|---|---|---|---|---|---|---|"]
    for r in rows:
        st = r["status"]
        lines.append(f"| {r['config']} | {'yes' if r['loaded'] else 'no'} "
                     f"| {us(st.get('turn_p50'))} | {us(st.get('turn_p99'))} "
                     f"| {'' if st.get('max_exact') else '≤ '}{us(st.get('turn_max'))} "
                     f"| {ms(st.get('poll_p99'))} / {ms(st.get('poll_max'))} "
                     f"| {ms(st.get('lag_p99'))} / {ms(st.get('lag_max'))} |")


def hot_table(exp, data, lines):
    runs = data["runs"]
    rate = data["rate"]
    if data["calibration"]:
        how = ("ceilings measured first: "
               + ", ".join(f"{k} {v:.0f} req/s" for k, v in data["calibration"].items()))
    else:
        how = "given with --rate"
    lines += [
        f"Constant rate for the latency columns: **{rate} req/s** ({how}).",
        "",
        "| server | configuration | random load | hot req/s (closed loop) | hot req/s at the rate "
        "| hot p50 ms | hot p99 ms | hot p99.9 ms | random MB/s | random req/s | random timeouts "
        "| loops in D state | loop poll p99 / max ms | loop lag p99 / max ms | fast-path hits "
        "| pool overflows | memory peak MB | hot data in memory min / mean |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        st = r.get("status") or {}
        rnd = r.get("random") or {}
        fast = st.get("fast_hit_ratio")
        mem = (r.get("memory") or {}).get("peak")
        lines.append(
            f"| {r['server']} | {r['config']} | {'yes' if r['loaded'] else 'no'} "
            f"| {num(closed(r))} | {num((r.get('rate') or {}).get('req_per_s'))} "
            f"| {ms(lat(r, 'p50'))} | {ms(lat(r, 'p99'))} | {ms(lat(r, 'p99.9'))} "
            f"| {num(rnd.get('mb_per_s')) if rnd else '—'} | {num(rnd.get('req_per_s')) if rnd else '—'} "
            f"| {rnd['errors']['timeout'] if rnd else '—'} "
            f"| {dshare(r)} "
            f"| {ms(st.get('poll_p99'))} / {ms(st.get('poll_max'))} "
            f"| {ms(st.get('lag_p99'))} / {ms(st.get('lag_max'))} "
            f"| {'—' if fast is None else f'{fast * 100:.1f}%'} "
            f"| {int(st['pool_overflows']) if st else r.get('overflow_lines', 0)} "
            f"| {'—' if mem is None else f'{mem / 2**20:.0f}'} | {resident(r)} |")
    if exp == "B":
        lines += ["", "nowait's own time to first byte (server side, `nowait_ttfb_seconds`, "
                  "worst worker):", "",
                  "| configuration | random load | TTFB p50 ms | p99 ms | p99.9 ms | max ms |",
                  "|---|---|---|---|---|---|"]
        for r in runs:
            st = r.get("status")
            if st:
                lines.append(f"| {r['config']} | {'yes' if r['loaded'] else 'no'} "
                             f"| {ms(st.get('ttfb_p50'))} | {ms(st.get('ttfb_p99'))} "
                             f"| {ms(st.get('ttfb_p999'))} | {ms(st.get('ttfb_max'))} |")
    loop_turn_table(runs, lines)
    lines += ["", "Where the loops waited (kernel stacks of the loop threads sampled every 10 ms "
              "during the hot phases; the most frequent in D state):", "",
              "| server | configuration | random load | samples | D | top stack in D (share of samples) |",
              "|---|---|---|---|---|---|"]
    for r in runs:
        s = r.get("loop_states")
        if not s or not s["samples"]:
            continue
        top = s["top_D_stacks"][0] if s["top_D_stacks"] else None
        top_txt = f"`{top[0]}` ({top[1] / s['samples'] * 100:.0f}%)" if top else "—"
        lines.append(f"| {r['server']} | {r['config']} | {'yes' if r['loaded'] else 'no'} "
                     f"| {s['samples']} | {s['share_D'] * 100:.0f}% | {top_txt} |")
    lines += ["", "Fast-path outcomes (nowait, all workers; a body miss goes to the pool "
              "in its front lane when the response has come mostly from memory):", "",
              "| configuration | random load | op | hit | miss | unsupported |",
              "|---|---|---|---|---|---|"]
    for r in runs:
        st = r.get("status")
        if not st:
            continue
        for op, c in st["fast"].items():
            if sum(c.values()):
                lines.append(f"| {r['config']} | {'yes' if r['loaded'] else 'no'} | {op} "
                             f"| {int(c['hit'])} | {int(c['miss'])} | {int(c['unsupported'])} |")
        if st.get("pool_front"):
            lines.append(f"| {r['config']} | {'yes' if r['loaded'] else 'no'} "
                         f"| pool tasks in the front lane | {int(st['pool_front'])} "
                         f"| of {int(st['pool_tasks'])} | |")
        bb = st.get("body_bytes") or {}
        if sum(bb.values()):
            mb = lambda k: f"{bb.get(k, 0) / 1e6:.0f} MB"
            lines.append(f"| {r['config']} | {'yes' if r['loaded'] else 'no'} "
                         f"| body bytes: sendfile on the loop / copied / pool | "
                         f"{mb('loop_sendfile')} | {mb('copy')} | {mb('pool_sendfile')} |")
        if st.get("pinned_files") or st.get("pins_dropped"):
            lines.append(f"| {r['config']} | {'yes' if r['loaded'] else 'no'} "
                         f"| files pinned at the end (MB) / pins dropped | "
                         f"{int(st['pinned_files'])} ({st['pinned_bytes'] / 1e6:.1f}) "
                         f"| {int(st['pins_dropped'])} | |")
    # Ratios.
    pairs = [("aio off", "aio off", True), ("aio threads; aio_fast_path off", "aio threads", True),
             ("aio threads (fast path on)", "aio threads", True),
             ("aio threads (fast path on)", "aio threads", False)]
    lines += ["", "Ratios nowait / nginx:", "",
              "| nowait | nginx | random load | hot req/s | hot p99 | random MB/s |",
              "|---|---|---|---|---|---|"]
    for nw, ng, loaded in pairs:
        a, b = find(runs, "nowait", nw, loaded), find(runs, "nginx", ng, loaded)
        if not (a and b):
            continue
        mb = lambda r: (r.get("random") or {}).get("mb_per_s")  # noqa: E731
        lines.append(f"| {nw} | {ng} | {'yes' if loaded else 'no'} | {ratio(closed(a), closed(b))} "
                     f"| {ratio(lat(a, 'p99'), lat(b, 'p99'))} | {ratio(mb(a), mb(b))} |")
    lines.append("")


def turn_target(exp, nw):
    """Issue 12's loop-turn target for nowait's loaded run of `exp`, if
    its status page was read."""
    st = (nw or {}).get("status") or {}
    p99, mx = st.get("turn_p99"), st.get("turn_max")
    if p99 is None or mx is None:
        return []
    bound = "" if st.get("max_exact") else "≤ "
    return [(exp, "loop turn under load p99 < 1 ms, max < 10 ms",
             f"p99 {us(p99)} µs, max {bound}{us(mx)} µs", p99 < 1e-3 and mx < 10e-3)]


def targets(res):
    """[(experiment, target, value text, met)]"""
    out = []
    if "A" in res:
        runs = res["A"]["runs"]
        nw = find(runs, "nowait", "aio threads (fast path on)", True)
        nw0 = find(runs, "nowait", "aio threads (fast path on)", False)
        ng = find(runs, "nginx", "aio threads", True)
        if nw and nw0:
            v = closed(nw) / closed(nw0) if closed(nw0) else 0
            out.append(("A", "nowait hot req/s under random load ≥ 80% of its unloaded figure",
                        f"{closed(nw):.1f} / {closed(nw0):.1f} = {v * 100:.0f}%", v >= 0.8))
        if nw and ng:
            v = (closed(nw) / closed(ng) if closed(ng) else float("inf")) if closed(nw) else 0.0
            out.append(("A", "nowait hot req/s under random load ≥ 10× nginx `aio threads`",
                        f"{closed(nw):.1f} / {closed(ng):.1f} = {v:.1f}×", v >= 10))
            a, b = nw["random"]["mb_per_s"], ng["random"]["mb_per_s"]
            out.append(("A", "nowait random MB/s ≥ nginx `aio threads`'s",
                        f"{a:.1f} vs {b:.1f} MB/s", a >= b))
        out += turn_target("A", nw)
    if "B" in res:
        runs = res["B"]["runs"]
        nw = find(runs, "nowait", "aio threads (fast path on)", True)
        nw0 = find(runs, "nowait", "aio threads (fast path on)", False)
        if nw and nw0:
            p, p0 = lat(nw, "p99"), lat(nw0, "p99")
            met = p is not None and p0 is not None and p <= 3 * p0
            out.append(("B", "hot-set p99 under load ≤ 3× nowait's unloaded p99 (same constant rate)",
                        f"{ms(p)} ms vs {ms(p0)} ms", met))
            v = closed(nw) / closed(nw0) if closed(nw0) else 0
            out.append(("B", "hot-set req/s under load ≥ 50% of unloaded",
                        f"{closed(nw):.0f} / {closed(nw0):.0f} = {v * 100:.0f}%", v >= 0.5))
        out += turn_target("B", nw)
    if "C" in res:
        for c in c_summary(res["C"]["runs"]):
            pairs = ", ".join(f"{x:.2f}" for x in c["ratios"])
            out.append(("C", f"req/s ≥ nginx: {c['mode']}, {c['target']}",
                        f"{c['nowait_rps']:.0f} vs {c['nginx_rps']:.0f} (medians); "
                        f"pairs {pairs}: median {c['paired']:.2f}×", c["paired"] >= 1))
            if c["mode"] == "reuseport":
                a, b = c["nowait_stdev"], c["nginx_stdev"]
                out.append(("C", f"reuseport latency stdev ≤ nginx's: {c['target']}",
                            f"{a / 1e3:.2f} vs {b / 1e3:.2f} ms (medians)", a <= b))
    out += report_hot.targets(res)
    if "D" in res:
        out += report_d.targets(res)
    return out


def _median(xs):
    xs = sorted(xs)
    n = len(xs)
    return (xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2) if n else 0


def c_summary(runs):
    """Per (mode, target), in the order run: each server's median req/s and
    latency stdev, and the ratio nowait / nginx of each pair of runs (a
    report of one run per server, from before the pairs, is one pair)."""
    out = []
    keys = list(dict.fromkeys((r["mode"], r["target"]) for r in runs))
    for mode, target in keys:
        by = {"nginx": {}, "nowait": {}}
        for r in runs:
            if r["mode"] == mode and r["target"] == target:
                by[r["server"]][r.get("pair", 0)] = r["wrk"]
        pairs = sorted(set(by["nginx"]) & set(by["nowait"]))
        if not pairs:
            continue
        ratios = [by["nowait"][p]["req_per_s"] / by["nginx"][p]["req_per_s"]
                  if by["nginx"][p]["req_per_s"] else 0 for p in pairs]
        out.append({
            "mode": mode, "target": target, "ratios": ratios, "paired": _median(ratios),
            **{f"{srv}_rps": _median([w["req_per_s"] for w in by[srv].values()])
               for srv in by},
            **{f"{srv}_stdev": _median([w["latency_us"]["stdev"] for w in by[srv].values()])
               for srv in by},
        })
    return out


def c_table(data, lines):
    pairs = data.get("pairs", 1)
    lines += [f"wrk, {data['conns']} connections, 2 threads, closed loop; {pairs} pair(s) of "
              "runs per mode, the servers taking turns (ABBA), each run a fresh start.", "",
              "| server | mode | target | pair | req/s | latency mean ms | stdev ms | p99 ms "
              "| requests per worker | busiest worker's share | errors |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        w = r["wrk"]
        per = " / ".join(str(int(v)) for _, v in sorted(w["per_worker"].items()))
        err = sum(w["errors"].values())
        lines.append(f"| {r['server']} | {r['mode']} | {r['target']} | {r.get('pair', 0) + 1} "
                     f"| {w['req_per_s']:.0f} "
                     f"| {w['latency_us']['mean'] / 1e3:.2f} | {w['latency_us']['stdev'] / 1e3:.2f} "
                     f"| {w['latency_us']['99'] / 1e3:.2f} | {per} "
                     f"| {num(w['busiest_share'] * 100 if w['busiest_share'] else None, '{:.0f}%')} "
                     f"| {err} |")
    lines += ["", "Ratios nowait / nginx: req/s, the median of the pairs' ratios (each pair's "
              "in brackets); latency stdev, of the servers' medians:", "",
              "| mode | target | req/s | latency stdev |", "|---|---|---|---|"]
    for c in c_summary(data["runs"]):
        each = ", ".join(f"{x:.2f}" for x in c["ratios"])
        lines.append(f"| {c['mode']} | {c['target']} | {c['paired']:.2f} ({each}) "
                     f"| {ratio(c['nowait_stdev'], c['nginx_stdev'])} |")
    lines.append("")


def _matplotlib(workdir):
    lib = os.path.join(workdir, "pylib")
    if lib not in sys.path:
        sys.path.insert(0, lib)
    try:
        import matplotlib
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--target", lib,
                        "matplotlib"], check=False)
        # The folder did not exist at the first try, and Python remembers
        # that a path entry has no finder: forget it, or the fresh install
        # stays invisible until the next run.
        importlib.invalidate_caches()
        sys.path_importer_cache.pop(lib, None)
        try:
            import matplotlib
        except ImportError:
            return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plots(res, outdir, stem, workdir):
    plt = _matplotlib(workdir)
    if plt is None:
        return []
    made = []
    for exp in ("A", "B"):
        if exp not in res:
            continue
        runs = res[exp]["runs"]
        fig, ax = plt.subplots(figsize=(9, 5.5))
        xs = list(range(len(PCTS)))
        for r in runs:
            ys = [lat(r, p) for p in PCTS]
            pts = [(x, y * 1e3) for x, y in zip(xs, ys) if y is not None]
            if not pts:
                continue
            name = f"{r['server']} {r['config']}" + ("" if r["loaded"] else " (no random load)")
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    linestyle="-" if r["loaded"] else "--", label=name)
        ax.set_xticks(xs, PCTS)
        ax.set_yscale("log")
        ax.set_ylabel("hot latency, ms (log)")
        ax.set_xlabel("percentile")
        ax.set_title(f"Experiment {exp}: hot latency at {res[exp]['rate']} req/s "
                     "(oha, latency-corrected)")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        f = f"{stem}-{exp}-latency.png"
        fig.savefig(os.path.join(outdir, f), dpi=100)
        plt.close(fig)
        made.append(f)
        fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 5))
        names = [f"{r['server']}\n{r['config']}" + ("" if r["loaded"] else "\nunloaded")
                 for r in runs]
        colors = ["tab:blue" if r["server"] == "nginx" else "tab:orange" for r in runs]
        ax1.bar(range(len(runs)), [closed(r) or 0 for r in runs], color=colors)
        ax1.set_xticks(range(len(runs)), names, fontsize=6, rotation=60, ha="right")
        ax1.set_ylabel("hot req/s (closed loop, 50 connections)")
        ax1.set_yscale("symlog")
        loaded = [r for r in runs if r["loaded"]]
        ax2.bar(range(len(loaded)), [r["random"]["mb_per_s"] for r in loaded],
                color=["tab:blue" if r["server"] == "nginx" else "tab:orange" for r in loaded])
        ax2.set_xticks(range(len(loaded)), [f"{r['server']}\n{r['config']}" for r in loaded],
                       fontsize=6, rotation=60, ha="right")
        ax2.set_ylabel("random load MB/s (wrk, 200 connections)")
        fig.suptitle(f"Experiment {exp}")
        fig.tight_layout()
        f = f"{stem}-{exp}-throughput.png"
        fig.savefig(os.path.join(outdir, f), dpi=100)
        plt.close(fig)
        made.append(f)
    if "C" in res:
        runs = res["C"]["runs"]
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
        for ax, target in zip(axes, ("small file", "return 200")):
            modes = [m for m in dict.fromkeys(r["mode"] for r in runs)]
            for i, server in enumerate(("nginx", "nowait")):
                vals = [_median([r["wrk"]["req_per_s"] for r in runs if r["server"] == server
                                 and r["mode"] == m and r["target"] == target]) for m in modes]
                ax.bar([x + i * 0.4 for x in range(len(modes))], vals, width=0.4, label=server)
            ax.set_xticks([x + 0.2 for x in range(len(modes))], modes)
            ax.set_title(f"C: {target}")
            ax.set_ylabel("req/s (wrk; median of the runs)")
            ax.legend()
        fig.tight_layout()
        f = f"{stem}-C-throughput.png"
        fig.savefig(os.path.join(outdir, f), dpi=100)
        plt.close(fig)
        made.append(f)
    made += report_hot.plots(res, plt, outdir, stem)
    if "D" in res:
        made += report_d.plots(res, plt, outdir, stem)
    return made


def write(res, outdir, stem, workdir):
    with open(os.path.join(outdir, stem + ".json"), "w") as f:
        json.dump(res, f, indent=1)
    facts = res["facts"]
    lines = [f"# nowait lab report — {res['started']} ({facts['mode']} mode)", "",
             "Produced by `bench/lab.sh`; see `bench/LAB.md` for the method. "
             "Servers: nginx (Debian nginx-light) and nowait, 2 workers each, same configuration.",
             "", "## The machine and the lab", "", "| fact | value |", "|---|---|"]
    for k, v in facts.items():
        if isinstance(v, dict):
            v = "; ".join(f"`{a}` = {b}" for a, b in v.items())
        lines.append(f"| {k} | {v} |")
    lines += ["", "## Targets", "", "| exp. | target | figures | |", "|---|---|---|---|"]
    for exp, what, val, met in targets(res):
        lines.append(f"| {exp} | {what} | {val} | {'**met**' if met else '**missed**'} |")
    lines.append("")
    if "A" in res:
        lines += ["## A. One hot 4 MB file under a random load of big files", ""]
        hot_table("A", res["A"], lines)
    if report_hot.targets(res):
        lines += ["## A, hot data: the hot load joins late; the hot URL switches", ""]
        report_hot.tables(res, lines)
    if "B" in res:
        lines += ["## B. A hot set of small files under a random load of small files", ""]
        hot_table("B", res["B"], lines)
    if "C" in res:
        lines += ["## C. Accepting: accept_mutex on/off and reuseport", ""]
        c_table(res["C"], lines)
    if "D" in res:
        lines += ["## D. The three-disk cache: hot hits while the disks fill, and one disk crawls",
                  ""]
        report_d.tables(res, lines)
    made = plots(res, outdir, stem, workdir)
    lines += ["## Plots", ""]
    if made:
        lines += [f"![{m}]({m})" for m in made]
    else:
        lines.append("(matplotlib unavailable: no plots)")
    lines += ["", "## Which tool measured what", "",
              "- hot req/s: `oha -c 50` closed loop (as fast as 50 connections go), from "
              "the first hot phase;",
              "- hot latency percentiles: `oha -c 50 -q RATE --latency-correction`, from "
              "the second phase: latency counted from when each request was due, so stalls "
              "are not hidden by coordinated omission;",
              "- random load MB/s and req/s: `wrk -t2 -c200` with `urls.lua` (a random URL per "
              "request), over warm-up + both hot phases;",
              "- C: `wrk -t2 -c100`, closed loop, throughput and latency mean/stdev/p99 as the "
              "source's table; per-worker counts from nowait's `nowait_requests_total{worker}` "
              "and nginx's access log (`log_format w '$pid'`);",
              "- loop blocked time, TTFB, fast-path ratio, pool overflows: nowait's status page "
              "scraped at the end of each run (cumulative over the run, warm-up included).", ""]
    path = os.path.join(outdir, stem + ".md")
    with open(path, "w") as f:
        f.write("\n".join(lines))
    return path
