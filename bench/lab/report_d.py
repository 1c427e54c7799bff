"""Experiment D's part of the report: tables, targets and plots (called by
report.py)."""

import os

PCTS = ["p50", "p90", "p99", "p99.9"]
# (stage, target list, label)
STAGES = [("unloaded", "all", "unloaded, all hot URLs"),
          ("unloaded", "d13", "unloaded, disk1+disk3 hot URLs"),
          ("loaded", "all", "miss load, all hot URLs"),
          ("loaded", "d13", "miss load, disk1+disk3 hot URLs"),
          ("crawl", "d13", "miss load + disk2 crawling, disk1+disk3 hot URLs")]


def _ms(s):
    return "—" if s is None else (f"{s * 1e3:.1f}" if s < 10 else f"{s * 1e3:.0f}")


def _num(x, fmt="{:.1f}"):
    return "—" if x is None else fmt.format(x)


def run_of(res, server):
    return next((r for r in res["D"]["runs"] if r["server"] == server), None)


def phase(r, stage, target, kind):
    return (((r or {}).get(stage) or {}).get(target) or {}).get(kind) or {}


def closed(r, stage, target):
    return phase(r, stage, target, "closed").get("req_per_s")


def fill_total(r, stage):
    f = ((r or {}).get("fill") or {}).get(stage)
    return sum(f["mb_per_s"]) if f else None


def targets(res):
    out = []
    nw, ng = run_of(res, "nowait"), run_of(res, "nginx")
    if not nw:
        return out
    lo, un = closed(nw, "loaded", "all"), closed(nw, "unloaded", "all")
    if lo is not None and un:
        out.append(("D", "nowait hot hits under the miss load ≥ 80% of its unloaded figure",
                    f"{lo:.0f} / {un:.0f} req/s = {lo / un * 100:.0f}%", lo >= 0.8 * un))
    if ng:
        g = closed(ng, "loaded", "all")
        if lo is not None and g is not None:
            v = lo / g if g else float("inf")
            out.append(("D", "nowait hot hits under the miss load ≥ 10× nginx's",
                        f"{lo:.0f} / {g:.1f} req/s = {v:.1f}×", v >= 10))
    cr, before = closed(nw, "crawl", "d13"), closed(nw, "loaded", "d13")
    un13 = closed(nw, "unloaded", "d13")
    if cr is not None and before:
        txt = f"{cr:.0f} / {before:.0f} req/s = {cr / before * 100:.0f}%"
        if un13:
            txt += f" ({cr / un13 * 100:.0f}% of the unloaded figure)"
        out.append(("D", "disk1+disk3 hits while disk2 crawls ≥ 80% of the same before the crawl",
                    txt, cr >= 0.8 * before))
    st = nw.get("status") or {}
    p99, mx = st.get("poll_p99"), st.get("poll_max")
    if p99 is not None and mx is not None:
        txt = f"p99 {_ms(p99)} ms, max {_ms(mx)} ms"
        # What else the loop threads waited for: a CPU (a poll that is
        # preempted counts the wait; the lab shares 2 CPUs).
        ls = (nw.get("loaded") or {}).get("loop_states") or {}
        if ls.get("share_runq") is not None:
            txt += (f"; under the miss load the loop threads waited for a CPU "
                    f"{ls['share_runq'] * 100:.0f}% of the time")
            if ls.get("runq_max_s") is not None:
                txt += f", {_ms(ls['runq_max_s'])} ms at most at once"
        out.append(("D", "loop blocked time (one poll) p99 < 1 ms, max < 10 ms",
                    txt, p99 < 1e-3 and mx < 10e-3))
    if ng:
        a, b = fill_total(nw, "whole"), fill_total(ng, "whole")
        if a is not None and b is not None:
            out.append(("D", "fill throughput (entries published, MB/s, all disks) ≥ nginx's",
                        f"{a:.1f} vs {b:.1f} MB/s", a >= b))
    return out


def tables(res, lines):
    data = res["D"]
    s = data["settings"]
    lines += [
        "The brief's configuration verbatim (`examples/cache-three-disks.conf`; the lab "
        "changes its listening port and its origin, and puts `worker_processes 2; user nobody "
        "nogroup;` and the pid/error log in front), three empty cache disks, each its own "
        "loop device and file system, mounted as `disk1..3` in the server's prefix. Origin: "
        "Debian's nginx outside the cgroup, every body `Cache-Control: max-age=86400`.", "",
        "| setting | value |", "|---|---|",
        f"| each cache disk | {s['disk']} |",
        f"| disk2 crawling | {s['crawl']} |",
        f"| servers' memory limit | {s['memory_limit']} |",
        f"| hot set | {s['hot_urls']} URLs, {s['hot_mb']:.1f} MB, per disk "
        f"{' / '.join(str(x) for x in s['hot_per_disk'])}; cached during the warm-up |",
        f"| miss load | {s['miss_rate']} req/s constant rate (oha, 100 connections), every "
        f"request a new URL; bodies {', '.join(s['classes'])} (mean {s['miss_mean_kb']:.0f} KB): "
        f"{s['miss_offered_mb_per_s']:.0f} MB/s offered to the disks |",
        f"| hot load | 50 connections, closed loop {s['seconds']} s, then {s['hot_rate']} req/s "
        f"constant rate {s['seconds']} s (latency-corrected) |",
        f"| miss-load warm-up before the loaded phases | {s['warmup']} s |", "",
        "Hot hits (req/s, closed loop) and latency at the constant rate:", "",
        "| server | stage | hot req/s | p50 ms | p90 ms | p99 ms | p99.9 ms | errors "
        "| loops in D state | loops waiting for a CPU | top stack in D |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        for stage, target, label in STAGES:
            c = phase(r, stage, target, "closed")
            if not c:
                continue
            rt = phase(r, stage, target, "rate")
            lat = rt.get("latency_s") or {}
            ls = (r.get(stage) or {}).get("loop_states") or {}
            top = (ls.get("top_D_stacks") or [None])[0]
            share = f"{ls['share_D'] * 100:.0f}%" if ls.get("samples") else "—"
            runq = ls.get("share_runq")
            runq = "—" if runq is None else f"{runq * 100:.0f}%"
            top_txt = (f"`{top[0]}` ({top[1] / ls['samples'] * 100:.0f}%)" if top else "—")
            errs = (c.get("errors") or 0) + (rt.get("errors") or 0)
            lines.append(f"| {r['server']} | {label} | {_num(c.get('req_per_s'))} "
                         + " ".join(f"| {_ms(lat.get(p))}" for p in PCTS)
                         + f" | {errs} | {share} | {runq} | {top_txt} |")
    lines += ["", "Fills (entries published on each disk, counted on the disks themselves):", "",
              "| server | stage | disk1 MB/s | disk2 MB/s | disk3 MB/s | total MB/s "
              "| entries/s | temp files left at the end |",
              "|---|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        for stage, label in (("loaded", "miss load"), ("crawl", "disk2 crawling"),
                             ("whole", "whole miss load")):
            f = (r.get("fill") or {}).get(stage)
            if not f:
                continue
            temps = sum(r["counts"]["crawl_end"]["temps"]) if stage == "whole" else ""
            lines.append(f"| {r['server']} | {label} "
                         + " ".join(f"| {x:.2f}" for x in f["mb_per_s"])
                         + f" | {sum(f['mb_per_s']):.2f} | {sum(f['entries_per_s']):.1f} "
                         f"| {temps} |")
    lines += ["", "The miss load and the rest:", "",
              "| server | miss req/s served | miss errors | hot URLs that reached the origin "
              "after the warm-up | warm-up: origin requests / hot entries found "
              "| memory peak MB | loop poll p99 / max ms | error log |",
              "|---|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        m = r.get("miss") or {}
        st = r.get("status") or {}
        mem = (r.get("memory") or {}).get("peak")
        errs = "; ".join(f"{k} ×{v}" for k, v in (r.get("error_lines") or {}).items()) or "—"
        lines.append(f"| {r['server']} | {_num(m.get('req_per_s'))} "
                     f"| {(m.get('errors') or 0) + (m.get('other_status') or 0)} "
                     f"| {r.get('hot_origin_requests', '—')} "
                     f"| {r.get('warm_origin_requests')} / {r.get('hot_entries_where_expected')} "
                     f"| {'—' if mem is None else f'{mem / 2**20:.0f}'} "
                     f"| {_ms(st.get('poll_p99'))} / {_ms(st.get('poll_max'))} | {errs} |")
    lines += ["", "What the disks did (per second, from the block layer's counters; "
              "reads and writes of data, metadata and journal):", "",
              "| server | stage | disk | read IOPS | read MB/s | write IOPS | write MB/s |",
              "|---|---|---|---|---|---|---|"]
    for r in data["runs"]:
        for stage, label in (("loaded", "miss load"), ("crawl", "disk2 crawling")):
            f = (r.get("fill") or {}).get(stage) or {}
            for i, io in enumerate(f.get("io_per_s") or []):
                lines.append(f"| {r['server']} | {label} | disk{i + 1} "
                             f"| {io['read_ios']:.0f} | {io['read_bytes'] / 1e6:.2f} "
                             f"| {io['write_ios']:.0f} | {io['write_bytes'] / 1e6:.2f} |")
    lines += ["", "The servers' cgroup memory at the end of each stage (MB):", "",
              "| server | stage | anonymous | page cache | dirty | writeback |",
              "|---|---|---|---|---|---|"]
    for r in data["runs"]:
        for stage in ("unloaded", "loaded", "crawl"):
            m = (r.get(stage) or {}).get("memory_stat") or {}
            if m:
                lines.append(f"| {r['server']} | {stage} "
                             + " ".join(f"| {m.get(k, 0) / 2**20:.0f}"
                                        for k in ("anon", "file", "dirty", "writeback"))
                             + " |")
    nw = run_of(res, "nowait")
    if nw and nw.get("pools"):
        lines += ["", "nowait's pools (one per disk) over the run:", "",
                  "| pool | tasks | overflows | queue wait p99 ms | max ms |", "|---|---|---|---|---|"]
        for name, p in sorted(nw["pools"].items()):
            lines.append(f"| {name} | {int(p.get('tasks', 0))} | {int(p.get('overflows', 0))} "
                         f"| {_ms(p.get('queue_wait_p99'))} | {_ms(p.get('queue_wait_max'))} |")
    if nw and nw.get("cache"):
        lines += ["", "nowait's cache counters:", "", "| counter | value |", "|---|---|"]
        for k, v in sorted(nw["cache"].items()):
            lines.append(f"| `{k}` | {v:.0f} |")
    lines.append("")


def plots(res, plt, outdir, stem):
    runs = res["D"]["runs"]
    made = []
    colors = {"nginx": "tab:blue", "nowait": "tab:orange"}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 5))
    width = 0.4
    for i, r in enumerate(runs):
        ys = [closed(r, st, t) or 0 for st, t, _ in STAGES]
        ax1.bar([x + i * width for x in range(len(STAGES))], ys, width=width,
                color=colors.get(r["server"]), label=r["server"])
    ax1.set_xticks([x + width / 2 for x in range(len(STAGES))],
                   [lbl.replace(", ", "\n") for _, _, lbl in STAGES], fontsize=6)
    ax1.set_yscale("symlog")
    ax1.set_ylabel("hot req/s (closed loop, 50 connections)")
    ax1.legend()
    ax1.set_title("hot hits")
    stages = [("loaded", "miss load"), ("crawl", "disk2 crawling")]
    labels = [f"{lbl}\ndisk{d}" for _, lbl in stages for d in (1, 2, 3)]
    for i, r in enumerate(runs):
        ys = [((r.get("fill") or {}).get(st) or {"mb_per_s": [0, 0, 0]})["mb_per_s"][d]
              for st, _ in stages for d in range(3)]
        ax2.bar([x + i * width for x in range(len(labels))], ys, width=width,
                color=colors.get(r["server"]), label=r["server"])
    ax2.set_xticks([x + width / 2 for x in range(len(labels))], labels, fontsize=6)
    ax2.set_ylabel("cache fills published, MB/s")
    ax2.legend()
    ax2.set_title("fills per disk")
    fig.suptitle("Experiment D: the three-disk cache")
    fig.tight_layout()
    f = f"{stem}-D-throughput.png"
    fig.savefig(os.path.join(outdir, f), dpi=100)
    plt.close(fig)
    made.append(f)
    fig, ax = plt.subplots(figsize=(9, 5.5))
    pcts = ["p10", "p25", "p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99"]
    for r in runs:
        for st, t, lbl in STAGES:
            lat = phase(r, st, t, "rate").get("latency_s") or {}
            pts = [(x, lat[p] * 1e3) for x, p in enumerate(pcts) if lat.get(p) is not None]
            if pts:
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                        color=colors.get(r["server"]),
                        linestyle={"unloaded": ":", "loaded": "-", "crawl": "--"}[st],
                        label=f"{r['server']}: {lbl}")
    ax.set_xticks(range(len(pcts)), pcts)
    ax.set_yscale("log")
    ax.set_ylabel("hot latency, ms (log)")
    ax.set_xlabel("percentile")
    ax.set_title(f"Experiment D: hot latency at {res['D']['settings']['hot_rate']} req/s "
                 "(oha, latency-corrected)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=6)
    fig.tight_layout()
    f = f"{stem}-D-latency.png"
    fig.savefig(os.path.join(outdir, f), dpi=100)
    plt.close(fig)
    made.append(f)
    return made
