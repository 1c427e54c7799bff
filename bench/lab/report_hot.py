"""The report's part for A's hot-data variants (issue 12): the hot load
joins 3 s after the random load ("late"), and the hot URL switches to a cold
file of the random set in the middle of the run ("switch"); nginx beside
nowait, per-second hot req/s and the hot file's residency over time."""

import os


def _variants(res):
    for key in ("A", "AV"):
        if key in res and res[key].get("variants"):
            return res[key]["variants"]
    return None


def _closed(r):
    return (r.get("closed") or {}).get("req_per_s") or 0.0


def _find(v, server, config, kind):
    for r in v["runs"]:
        if r["server"] == server and r["config"] == config and r["kind"] == kind:
            return r
    return None


NOWAIT = ("nowait", "aio threads (fast path on)")


def targets(res):
    """[(experiment, target, value text, met)]"""
    v = _variants(res)
    if not v:
        return []
    out = []
    late = _find(v, *NOWAIT, "late")
    if late:
        u = late["unloaded"]
        x = _closed(late) / u if u else 0.0
        out.append(("A late", "hot load joining 3 s after the random load: hot req/s ≥ 80% of "
                    "unloaded", f"{_closed(late):.1f} / {u:.1f} = {x * 100:.0f}%", x >= 0.8))
    sw = _find(v, *NOWAIT, "switch")
    if sw:
        t = sw.get("recovery_s")
        out.append(("A switch", "hot URL switched to a cold file: back to ≥ 80% of unloaded "
                    "within 2 s", "never" if t is None else f"{t} s", t is not None and t <= 2))
        u = sw["unloaded"]
        w = sw.get("windows") or []
        if w and u:
            width = v.get("window_s", 3)
            low = min(w) / u
            out.append(("A switch", f"after the switch, every {width} s window ≥ 80% of unloaded "
                        f"({len(w) * width} s measured)",
                        " ".join(f"{x / u * 100:.0f}%" for x in w), low >= 0.8))
    return out


def _res_fmt(r):
    tl = (r.get("loop_states") or {}).get("resident_timeline") or []
    if not tl:
        return "—"
    # the URL the measured phase requests: the switch target, if any
    first = [f[-1] for _, f in tl if f]
    return f"{min(first) * 100:.0f}% / {sum(first) / len(first) * 100:.0f}%"


def tables(res, lines):
    v = _variants(res)
    if not v:
        return
    lines += [f"Unloaded ceilings (closed loop, 50 connections): "
              + ", ".join(f"{k} {x:.1f} req/s" for k, x in v["ceilings"].items()) + ".", "",
              "- **late**: the random load (200 connections) runs alone for "
              f"{v['delay_s']} s, then the 50 hot connections join; the hot figure is their "
              "whole closed-loop phase.",
              "- **switch**: random and hot load together as in A; after the warm-up the hot "
              "URL becomes a cold file of the random set; \"back to 80%\" is the end of the "
              "first second in which the new URL's completions reach 80% of the server's "
              "unloaded req/s.", "",
              f"- hot load: {v.get('hot_load', 'oha')} with 50 connections; the switch "
              f"variant measures {v.get('window_s', 3)}-second windows after the switch, each "
              "as a share of the server's unloaded req/s.", "",
              "| server | configuration | variant | hot req/s | % of unloaded | per second "
              "| windows (% of unloaded) | back to 80% | random MB/s | measured URL's file resident "
              "min / mean | pool tasks promoted |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in v["runs"]:
        u = r["unloaded"]
        ps = (r.get("closed") or {}).get("per_second") or []
        rec = r.get("recovery_s")
        promoted = ((r.get("status") or {}).get("pool_promoted"))
        w = r.get("windows") or []
        wtxt = " ".join(f"{x / u * 100:.0f}%" for x in w) if (w and u) else "—"
        lines.append(
            f"| {r['server']} | {r['config']} | {r['kind']} | {_closed(r):.1f} | "
            f"{(_closed(r) / u * 100 if u else 0):.0f}% | {' '.join(str(n) for n in ps)} | "
            f"{wtxt} | "
            f"{'never' if rec is None else f'{rec} s'} | "
            f"{(r.get('random') or {}).get('mb_per_s', 0):.1f} | {_res_fmt(r)} | "
            f"{'—' if promoted is None else promoted} |")
    lines.append("")


def plots(res, plt, outdir, stem):
    v = _variants(res)
    if not v:
        return []
    made = []
    for kind in ("late", "switch"):
        runs = [r for r in v["runs"] if r["kind"] == kind]
        if not runs:
            continue
        fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
        for r in runs:
            name = f"{r['server']} {r['config']}"
            t0 = r.get("switched_at_s") or 0
            ps = (r.get("closed") or {}).get("per_second") or []
            ax1.step([t0 + i + 1 for i in range(len(ps))], ps, where="pre", label=name)
            tl = (r.get("loop_states") or {}).get("resident_timeline") or []
            for j, url in enumerate(r.get("tracked") or []):
                pts = [(t, f[j] * 100) for t, f in tl if j < len(f)]
                if pts:
                    ax2.plot([p[0] for p in pts], [p[1] for p in pts],
                             linestyle="-" if j == 0 else "--", label=f"{name}: {url}")
        for server, u in v["ceilings"].items():
            ax1.axhline(u * v["target"], linestyle=":", color="grey")
        ax1.set_ylabel("hot req/s (completions per second)")
        ax1.set_title(f"A, {kind}: hot load (dotted: 80% of each server's unloaded req/s)")
        ax1.legend(fontsize=7)
        ax1.grid(True, alpha=0.3)
        ax2.set_ylabel("resident in memory, %")
        ax2.set_xlabel("seconds since the random load started")
        ax2.set_ylim(-5, 105)
        ax2.legend(fontsize=6)
        ax2.grid(True, alpha=0.3)
        fig.tight_layout()
        f = f"{stem}-A-{kind}.png"
        fig.savefig(os.path.join(outdir, f), dpi=100)
        plt.close(fig)
        made.append(f)
    return made
