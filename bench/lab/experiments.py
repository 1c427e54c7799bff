"""The brief's three experiments, each a matrix of (server, configuration)
runs, one server at a time, each from a cold cache.

A run of A or B: remount (cold caches) → start the server in the cgroup →
fetch the hot URLs once (the hot set is "always in memory") → start the
random load (wrk, 200 connections) and with it the hot load (oha, 50
connections, closed loop: during the warm-up it is not measured, as in the
source the hot connections run all along) → after the warm-up, the hot load
closed loop for T s, then at a constant rate for T s → the
random load ends → scrape nowait's status page → stop the server.
The unloaded runs are the same without the random load: each server's
ceiling. The constant rate is the same for every run of an experiment: a
fraction of the lower of the two servers' ceilings, measured first.
"""

import os
import re
import time

import experiment_d
import folios
import load
import sampler
import servers
import status

# (server, label, render() options) for A and B.
MATRIX = [
    ("nginx", "aio off", dict(aio="off")),
    ("nginx", "aio threads", dict(aio="threads")),
    ("nowait", "aio off", dict(aio="off")),
    ("nowait", "aio threads; aio_fast_path off", dict(aio="threads", fast_path=False)),
    ("nowait", "aio threads (fast path on)", dict(aio="threads", fast_path=True)),
]
# The configuration each server's unloaded ceiling is measured with.
CEILING = {"nginx": ("aio threads", dict(aio="threads")),
           "nowait": ("aio threads (fast path on)", dict(aio="threads", fast_path=True))}
RANDOM_CONNS, HOT_CONNS = 200, 50
C_CONNS = 100
C_MODES = [("accept_mutex on", dict(accept_mutex="on")),
           ("accept_mutex off", dict(accept_mutex="off")),
           ("reuseport", dict(accept_mutex="off", reuseport=True))]
C_SMALL = "index.html"
# nginx's own index.html is 615 bytes; this is a page of that size.
C_SMALL_BODY = ("<!DOCTYPE html>\n<html><head><title>Welcome</title></head><body>\n"
                + "<p>" + "x" * 520 + "</p>\n</body></html>\n")


class Context:
    def __init__(self, a, d, cg, td, urls, run_dir, tools, log):
        self.a, self.disk, self.cg, self.td = a, d, cg, td
        self.urls, self.run_dir, self.tools, self.log = urls, run_dir, tools, log
        self.n = 0

    def binary(self):
        return self.a.nowait

    def prefix(self, tag):
        self.n += 1
        p = os.path.join(self.run_dir, f"{self.n:02d}-{re.sub(r'[^a-zA-Z0-9]+', '_', tag)}")
        os.makedirs(p, exist_ok=True)
        return p


def fetch(path, timeout=120):
    return servers.get(path, timeout)


def start(ctx, server, tag, conf_opts, root):
    prefix = ctx.prefix(f"{server}-{tag}")
    text = servers.render(server, prefix, root, **conf_opts)
    servers.check_config(server, ctx.binary(), prefix, text)
    ctx.cg.reset_peak()
    run = servers.start(server, ctx.binary(), prefix, text, ctx.cg, ctx.td)
    return run, prefix


def stop(ctx, run):
    ctx.td.run_one(run.teardown_key)


def overflow_lines(run):
    return len(re.findall(r"queue overflow", run.error_log()))


def hot_run(ctx, exp, server, label, conf_opts, loaded, rate, phases=("closed", "rate")):
    """One run of A or B; returns its figures."""
    a = ctx.a
    hot = ctx.urls["a_hot"] if exp == "A" else ctx.urls["b_hot"]
    rnd = ctx.urls["a_random"] if exp == "A" else ctx.urls["b_random"]
    hot_arg = open(hot).read().split()[0] if exp == "A" else hot
    ctx.disk.cold()
    tag = f"{exp}-{label}-{'loaded' if loaded else 'unloaded'}"
    ctx.log(f"{exp}: {server} {label}, {'with' if loaded else 'without'} random load")
    run, prefix = start(ctx, server, tag, conf_opts, ctx.disk.mnt)
    res = {"server": server, "config": label, "loaded": loaded}
    wrk = None
    hot_paths = [os.path.join(ctx.disk.mnt, p.lstrip("/")) for p in open(hot).read().split()]
    samp = sampler.Sampler(ctx.cg, hot_paths)
    try:
        t0 = time.time()
        for p in open(hot).read().split():
            fetch(p)
        res["warm_hot_s"] = time.time() - t0
        n_phases = len(phases)
        if loaded:
            wrk_secs = a.warmup + n_phases * a.seconds + 2
            wrk = load.Wrk(servers.PORT, rnd, RANDOM_CONNS, 2, wrk_secs,
                           os.path.join(prefix, "wrk-random.txt"))
            # The hot load does not wait for the random load to settle: in
            # the source its 50 connections run all along, which is what
            # keeps the hot data hot. Its warm-up figures are kept, not
            # reported.
            res["warmup"] = load.oha(ctx.tools, servers.PORT, hot_arg, HOT_CONNS, a.warmup,
                                     os.path.join(prefix, "oha-warmup.json"))
        samp.start()
        if "closed" in phases and getattr(a, "hot_load", "oha") == "wrk" and exp == "A":
            res["closed"] = load.wrk_hot(servers.PORT, hot_arg, HOT_CONNS, 2, a.seconds,
                                         os.path.join(prefix, "wrk-closed.txt"),
                                         window=SWITCH_WINDOW)
        elif "closed" in phases:
            res["closed"] = load.oha(ctx.tools, servers.PORT, hot_arg, HOT_CONNS, a.seconds,
                                     os.path.join(prefix, "oha-closed.json"))
        if "rate" in phases:
            res["rate"] = load.oha(ctx.tools, servers.PORT, hot_arg, HOT_CONNS, a.seconds,
                                   os.path.join(prefix, "oha-rate.json"), rate=rate,
                                   db=ctx.a.timeline)
        res["loop_states"] = samp.stop()
        if wrk:
            res["random"] = wrk.wait(extra=a.seconds * 2 + 60)
            wrk = None
        if server == "nowait":
            text = run.status()
            with open(os.path.join(prefix, "status.txt"), "w") as f:
                f.write(text)
            res["status"] = status.summarize(text)
        res["overflow_lines"] = overflow_lines(run)
        res["memory"] = ctx.cg.memory_stats()
    finally:
        samp.stop()
        if wrk:
            wrk.kill()
        stop(ctx, run)
    return res


def _wanted(ctx, server, label, loaded):
    """Whether --runs (if given) selects this run of A or B."""
    if not ctx.a.runs:
        return True
    picks = [x.strip() for x in ctx.a.runs.split(",") if x.strip()]
    if not loaded and not any("unloaded" in p for p in picks):
        return False
    for p in picks:
        srv, _, cfg = p.replace("unloaded", "").strip(" /").partition("/")
        if srv == server and cfg.strip() in label:
            return True
    return False


def _hot_matrix(ctx, exp):
    out = {"runs": []}
    # 1. Calibrate: each server's closed-loop ceiling, to choose the rate
    # (unless --rate gives it).
    if ctx.a.rate:
        rate = ctx.a.rate
        out["calibration"] = {}
    else:
        ceilings = {}
        for server, (label, opts) in CEILING.items():
            r = hot_run(ctx, exp, server, label, opts, loaded=False, rate=None, phases=("closed",))
            ceilings[server] = r["closed"]["req_per_s"]
        low = min(ceilings.values())
        rate = max(1, int(low * ctx.a.rate_fraction))
        out["calibration"] = ceilings
        ctx.log(f"{exp}: ceilings {ceilings}; constant rate {rate} req/s")
    out["rate"] = rate
    # 2. Unloaded, both phases, then the loaded matrix.
    for server, (label, opts) in CEILING.items():
        if _wanted(ctx, server, label, False):
            out["runs"].append(hot_run(ctx, exp, server, label, opts, loaded=False, rate=rate))
    for server, label, opts in MATRIX:
        if _wanted(ctx, server, label, True):
            out["runs"].append(hot_run(ctx, exp, server, label, opts, loaded=True, rate=rate))
    return out


def run_A(ctx):
    out = _hot_matrix(ctx, "A")
    out["variants"] = _variants(ctx, out["calibration"])
    return out


# The hot-data variants of A (issue 12). nginx as the issue measured it
# (the hot location `aio off`, the rest `aio threads`: its loop reads the
# hot file back itself) and with `aio threads` everywhere; nowait as in A.
HOT_LATE_DELAY = 3
SWITCH_TARGET = 0.8
# The switch variant measures at least this long after the switch, so that
# a newly hot file that loses ground after its first seconds shows.
SWITCH_SECONDS = 15
# The switch target holds in every window of this many seconds after the
# switch (the first one included).
SWITCH_WINDOW = 3


def _aio_off_for(urls):
    return "\n".join(f"        location = {u} {{ aio off; }}" for u in urls)


def _variant_matrix(hot, switch_to):
    return [
        ("nginx", "aio threads; hot location aio off",
         dict(aio="threads", extra_locations=_aio_off_for([hot, switch_to]))),
        ("nginx", "aio threads", dict(aio="threads")),
        ("nowait", "aio threads (fast path on)", dict(aio="threads", fast_path=True)),
    ]


def variant_run(ctx, server, label, conf_opts, kind):
    """One hot-data variant run; kind is "late" (the random load runs
    HOT_LATE_DELAY s alone, then the hot load joins) or "switch" (random and
    hot load together as in A; after the warm-up the hot URL becomes a cold
    file of the random set). The measured hot phase is closed loop, with a
    per-second timeline; the residency of the hot file(s) is sampled from
    the random load's start."""
    a = ctx.a
    hot = ctx.urls["a_hot"]
    hot_url = open(hot).read().split()[0]
    rnd = ctx.urls["a_random"]
    switch_to = _switch_target(ctx)
    ctx.disk.cold()
    tag = f"A-{kind}-{label}"
    ctx.log(f"A ({kind}): {server} {label}")
    run, prefix = start(ctx, server, tag, conf_opts, ctx.disk.mnt)
    res = {"server": server, "config": label, "kind": kind}
    track_urls = [hot_url] + ([switch_to] if kind == "switch" else [])
    res["tracked"] = track_urls
    track = [os.path.join(ctx.disk.mnt, u.lstrip("/")) for u in track_urls]
    samp = sampler.Sampler(ctx.cg, track, track=track)
    wrk = None
    try:
        fetch(hot_url)
        pre = HOT_LATE_DELAY if kind == "late" else a.warmup
        measured = a.seconds if kind == "late" else max(a.seconds, SWITCH_SECONDS)
        wrk = load.Wrk(servers.PORT, rnd, RANDOM_CONNS, 2, pre + measured + 2,
                       os.path.join(prefix, "wrk-random.txt"))
        samp.start()
        if kind == "late":
            time.sleep(pre)
            url = hot_url
        else:
            if getattr(a, "hot_load", "oha") == "wrk":
                res["before"] = load.wrk_hot(servers.PORT, hot_url, HOT_CONNS, 2, pre,
                                             os.path.join(prefix, "wrk-before.txt"), window=pre)
            else:
                res["before"] = load.oha(ctx.tools, servers.PORT, hot_url, HOT_CONNS, pre,
                                         os.path.join(prefix, "oha-before.json"),
                                         timeline=True)
            url = switch_to
        res["switched_at_s"] = round(time.time() - samp.t0, 2)
        seconds = a.seconds if kind == "late" else max(a.seconds, SWITCH_SECONDS)
        if getattr(a, "hot_load", "oha") == "wrk":
            def per_worker():
                if server != "nowait":
                    return None
                text = run.status()
                conns = {l.get("worker"): v for n, l, v in status.parse(text)
                         if n == "nowait_connections"}
                parsed = status.parse(text)
                body = {l.get("path"): v for n, l, v in parsed if n == "nowait_body_bytes_total"}
                gauges = {n: v for n, l, v in parsed
                          if n in ("nowait_memory_short", "nowait_pinned_files",
                                   "nowait_pinned_bytes", "nowait_pinned_budget_bytes",
                                   "nowait_pins_dropped_total")}
                # How the tracked files sit in the page cache (resident
                # pages, folios): sendfile() pays per folio.
                cached = {u: folios.count(p) for u, p in zip(track_urls, track)}
                # The kernel's memory work meanwhile (compaction, reclaim):
                # cumulative, as /proc/vmstat counts it.
                with open("/proc/vmstat") as f:
                    vm = {k: int(v) for k, v in (l.split() for l in f)
                          if k.startswith(("compact_", "pgscan", "pgsteal", "allocstall",
                                           "pgmigrate", "thp_"))}
                return {"requests": status.summarize(text).get("requests_per_worker"),
                        "connections": conns, "body_bytes": body, "folios": cached, "vmstat": vm, **gauges}
            res["closed"] = load.wrk_hot(servers.PORT, url, HOT_CONNS, 2, seconds,
                                         os.path.join(prefix, f"wrk-{kind}-{server}.txt"),
                                         window=SWITCH_WINDOW, after=per_worker,
                                         perf_pid=run.proc.pid if server == "nowait" else None)
        else:
            res["closed"] = load.oha(ctx.tools, servers.PORT, url, HOT_CONNS, seconds,
                                     os.path.join(prefix, "oha-closed.json"), timeline=True)
        res["loop_states"] = samp.stop()
        res["random"] = wrk.wait(extra=seconds * 2 + 60)
        wrk = None
        if server == "nowait":
            text = run.status()
            with open(os.path.join(prefix, "status.txt"), "w") as f:
                f.write(text)
            res["status"] = status.summarize(text)
        res["overflow_lines"] = overflow_lines(run)
    finally:
        samp.stop()
        if wrk:
            wrk.kill()
        stop(ctx, run)
    return res


def _switch_target(ctx):
    """The cold file the hot URL switches to: the last of the random set."""
    return open(ctx.urls["a_random"]).read().split()[-1]


def _variants(ctx, ceilings=None):
    """Both variants for every configuration of the variant matrix, with
    each server's unloaded ceiling (measured here when not given)."""
    hot_url = open(ctx.urls["a_hot"]).read().split()[0]
    if ceilings is None:
        ceilings = {}
        for server, (label, opts) in CEILING.items():
            r = hot_run(ctx, "A", server, label, opts, loaded=False, rate=None,
                        phases=("closed",))
            ceilings[server] = r["closed"]["req_per_s"]
    out = {"ceilings": ceilings, "delay_s": HOT_LATE_DELAY, "target": SWITCH_TARGET,
           "window_s": SWITCH_WINDOW, "hot_load": getattr(ctx.a, "hot_load", "oha"),
           "runs": []}
    for kind in ("late", "switch"):
        for server, label, opts in _variant_matrix(hot_url, _switch_target(ctx)):
            r = variant_run(ctx, server, label, opts, kind)
            r["unloaded"] = ceilings[server]
            r["recovery_s"] = recovery_seconds(r["closed"].get("per_second") or [],
                                               SWITCH_TARGET * ceilings[server])
            r["windows"] = windows(r["closed"].get("per_second") or [], SWITCH_WINDOW)
            out["runs"].append(r)
    return out


def windows(per_second, width):
    """The mean req/s of each whole window of `width` seconds of a phase,
    from its start."""
    return [sum(per_second[i:i + width]) / width
            for i in range(0, len(per_second) - width + 1, width)]


def recovery_seconds(per_second, threshold):
    """Seconds from the start of a phase until the hot rate is back at
    `threshold`: the end of the first one-second bin at or above it; None if
    none is."""
    for i, n in enumerate(per_second):
        if n >= threshold:
            return i + 1
    return None


def run_AV(ctx):
    """A's hot-data variants alone (the hot load joins late; the hot URL
    switches), with each server's unloaded ceiling."""
    return {"variants": _variants(ctx)}


def run_B(ctx):
    return _hot_matrix(ctx, "B")


def _worker_counts_nginx(prefix, offset):
    """Lines per pid appended to the access log after `offset`."""
    counts = {}
    with open(os.path.join(prefix, "access.log"), "rb") as f:
        f.seek(offset)
        for line in f:
            k = line.strip().decode()
            counts[k] = counts.get(k, 0) + 1
    return counts


def _log_size(prefix):
    p = os.path.join(prefix, "access.log")
    return os.path.getsize(p) if os.path.exists(p) else 0


def run_C(ctx):
    """Experiment C: accept modes, a small file and `return 200 "OK"`."""
    root = os.path.join(ctx.run_dir, "c-root")
    os.makedirs(root, exist_ok=True)
    os.chmod(root, 0o755)
    with open(os.path.join(root, C_SMALL), "w") as f:
        f.write(C_SMALL_BODY)
    os.chmod(os.path.join(root, C_SMALL), 0o644)
    lists = {}
    for target, path in (("small file", "/" + C_SMALL), ("return 200", "/ok")):
        p = os.path.join(ctx.run_dir, f"c-{path.strip('/')}.txt")
        with open(p, "w") as f:
            f.write(path + "\n")
        lists[target] = p
    ok_loc = '        location = /ok { return 200 "OK"; }'
    out = {"runs": [], "conns": C_CONNS, "pairs": ctx.a.c_pairs}
    # The servers take turns, mode by mode: pair i runs nginx then nowait,
    # pair i+1 nowait then nginx (ABBA), so that a machine whose speed
    # drifts from minute to minute favours neither; the report compares the
    # runs of each pair.
    for mode, opts in C_MODES:
        for pair in range(ctx.a.c_pairs):
            order = ("nginx", "nowait") if pair % 2 == 0 else ("nowait", "nginx")
            for server in order:
                ctx.log(f"C: {server} {mode} (pair {pair + 1}/{ctx.a.c_pairs})")
                out["runs"] += _c_runs(ctx, server, mode, opts, root, lists, ok_loc, pair)
    return out


def _c_runs(ctx, server, mode, opts, root, lists, ok_loc, pair):
    """One server in one accept mode: a wrk run per target."""
    runs = []
    run, prefix = start(ctx, server, f"C-{mode}-{pair}", dict(
        aio="off", access_log="$pid", extra_locations=ok_loc, **opts), root)
    try:
        fetch("/" + C_SMALL)
        fetch("/ok")
        for target, lst in lists.items():
            before_log = _log_size(prefix)
            before = (status.requests_per_worker(run.status())
                      if server == "nowait" else None)
            w = load.wrk_run(servers.PORT, lst, C_CONNS, 2, ctx.a.c_seconds,
                             os.path.join(prefix, f"wrk-{target.replace(' ', '_')}.txt"))
            if server == "nowait":
                after = status.requests_per_worker(run.status())
                per = {k: after[k] - before.get(k, 0) for k in after}
            else:
                time.sleep(0.5)  # let the workers flush their log lines
                per = _worker_counts_nginx(prefix, before_log)
            total = sum(per.values()) or 1
            w["per_worker"] = per
            w["busiest_share"] = max(per.values()) / total if per else None
            runs.append({"server": server, "mode": mode, "target": target, "pair": pair,
                         "wrk": w})
    finally:
        stop(ctx, run)
    return runs


def run_D(ctx):
    """Experiment D: the brief's three-disk cache (experiment_d.py)."""
    return experiment_d.run_D(ctx)
