"""Experiment D: the brief's multi-disk caching proxy (its last configuration,
verbatim), three throttled cache disks, nginx beside nowait.

One run per server, each on three empty file systems:
1. start the origin (once, outside the cgroup) and the server (in it);
2. warm-up: every hot URL is fetched once (a miss: the origin answers and
   the entry is filled), then again (a hit); `sync`; the origin's log must
   show each hot URL once;
3. unloaded: the hot load (50 connections) closed loop for T s, then at a
   constant rate for T s (latency-corrected); the same for the hot URLs of
   disk1 and disk3 alone;
4. loaded: a miss load (every request a new URL, at a constant rate above
   what the three disks can absorb, so all three keep filling) runs from
   here to the end; after a warm-up, the four hot phases again;
5. crawl: disk2 alone is slowed to a crawl; the disk1+disk3 hot phases
   again, the miss load still going to all three disks;
6. the miss load ends; nowait's status page; the entries on each disk are
   counted at the end of each stage (fill throughput); stop.

The hot URLs stay in the page cache (the memory limit is well above the hot
set): what is measured is what a busy or crawling disk does to the hits of
the others, not the cost of reading hot entries from the disks.
"""

import hashlib
import os
import random
import re
import subprocess
import time

import cachedisks
import load
import origin
import sampler
import servers
import status

HOT_CONNS = 50
MISS_CONNS = 100
# The brief's configuration, verbatim; the lab changes its port and origin.
EXAMPLE = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__)))), "examples", "cache-three-disks.conf")
# split_clients $request_uri $disk { 33.3% 1; 33.3% 2; * 3; }
SPLIT = [3330, 3330, 0]
ORIGIN_PORT_OFFSET = 1


def murmur2(data):
    """nginx's ngx_murmur_hash2."""
    m = 0x5bd1e995
    h = len(data) & 0xffffffff
    i = 0
    while len(data) - i >= 4:
        k = data[i] | data[i + 1] << 8 | data[i + 2] << 16 | data[i + 3] << 24
        k = (k * m) & 0xffffffff
        k ^= k >> 24
        k = (k * m) & 0xffffffff
        h = (h * m) & 0xffffffff
        h ^= k
        i += 4
    rest = len(data) - i
    if rest == 3:
        h ^= data[i + 2] << 16
    if rest >= 2:
        h ^= data[i + 1] << 8
    if rest >= 1:
        h ^= data[i]
        h = (h * m) & 0xffffffff
    h ^= h >> 13
    h = (h * m) & 0xffffffff
    h ^= h >> 15
    return h


def disk_of(uri):
    """The disk (1-based) `split_clients $request_uri` gives `uri`, as nginx
    computes it (ngx_http_split_clients_variable)."""
    h = murmur2(uri.encode())
    last = 0
    for i, pct in enumerate(SPLIT):
        if pct == 0:
            return i + 1
        last += pct * 0xffffffff // 10000
        if h < last:
            return i + 1
    return len(SPLIT)


def entry_path(prefix, uri):
    """Where a cache with `levels=1:2` keeps `uri`'s entry."""
    h = hashlib.md5(uri.encode()).hexdigest()
    return os.path.join(prefix, f"disk{disk_of(uri)}", h[-1], h[-3:-1], h)


def urls(n, kind, seed):
    """`n` URLs `/<kind>/<class>/<i>`, classes drawn with the miss load's shares."""
    rng = random.Random(seed)
    names = [c[0] for c in origin.CLASSES]
    weights = [c[2] for c in origin.CLASSES]
    return [f"/{kind}/{rng.choices(names, weights)[0]}/{i}" for i in range(n)]


def render(server, prefix, port, origin_port):
    text = open(EXAMPLE).read()
    for old, new in (("listen 8000;", f"listen 127.0.0.1:{port};"),
                     ("server 127.0.0.1:8081;", f"server 127.0.0.1:{origin_port};")):
        if old not in text:
            raise RuntimeError(f"{EXAMPLE} no longer has `{old}`")
        text = text.replace(old, new)
    if server == "nowait":
        text = text.replace("        location / {",
                            "        location = /nowait_status { nowait_status; }\n\n"
                            "        location / {", 1)
    # The main-context lines every lab run has (the brief's text is a
    # fragment of an nginx.conf: it leaves them out).
    head = "\n".join([
        "# The lab's main-context lines, then the brief's configuration.",
        "worker_processes 2;",
        "daemon off;",
        "user nobody nogroup;",
        f"pid {prefix}/server.pid;",
        f"error_log {prefix}/error.log warn;",
        "",
    ])
    return head + text


class Counts:
    """Entries on each disk at a moment."""

    def __init__(self, disks, t):
        self.t = t
        self.per_disk = [disks.entries(i) for i in range(1, disks.count + 1)]
        self.io = [disks.io(i) for i in range(1, disks.count + 1)]

    def as_dict(self):
        return {"t": self.t, "entries": [e[0] for e in self.per_disk],
                "bytes": [e[1] for e in self.per_disk], "temps": [e[2] for e in self.per_disk],
                "io": self.io}


def fill_rate(a, b):
    """Bytes/s and entries/s filled on each disk between two counts."""
    dt = b["t"] - a["t"]
    io = [{k: (y[k] - x[k]) / dt for k in x} for x, y in zip(a["io"], b["io"])]
    return {"seconds": dt,
            "mb_per_s": [(y - x) / dt / 1e6 for x, y in zip(a["bytes"], b["bytes"])],
            "entries_per_s": [(y - x) / dt for x, y in zip(a["entries"], b["entries"])],
            "io_per_s": io}


def pools(text):
    """Per pool: tasks, overflows, queue wait p99 (nowait's status page)."""
    s = status.parse(text)
    out = {}
    for name, labels, v in s:
        pool = labels.get("pool")
        if not pool:
            continue
        p = out.setdefault(pool, {})
        if name == "nowait_pool_tasks_total":
            p["tasks"] = p.get("tasks", 0) + v
        elif name == "nowait_pool_overflows_total":
            p["overflows"] = p.get("overflows", 0) + v
        elif name == "nowait_pool_queue_wait_seconds" and labels.get("quantile") == "0.99":
            p["queue_wait_p99"] = max(p.get("queue_wait_p99", 0), v)
        elif name == "nowait_pool_queue_wait_seconds" and labels.get("quantile") == "1":
            p["queue_wait_max"] = max(p.get("queue_wait_max", 0), v)
    return out


def cache_metrics(text):
    """Every `nowait_cache_*` sample, summed over the labels but the zone."""
    out = {}
    for name, labels, v in status.parse(text):
        if name.startswith("nowait_cache_") and "quantile" not in labels:
            key = name + (f"{{zone={labels['zone']}}}" if "zone" in labels else "")
            out[key] = out.get(key, 0) + v
    return out


def write_list(path, paths):
    with open(path, "w") as f:
        f.write("\n".join(paths) + "\n")
    return path


def one_server(ctx, server, o, lists, hot, d):
    """Experiment D for one server; returns its figures."""
    a = ctx.a
    prefix = ctx.prefix(f"D-{server}")
    os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
    # What an earlier run left in the page cache (charged to the cgroup)
    # must not count against this one.
    subprocess.run(["sync"], check=False)
    with open("/proc/sys/vm/drop_caches", "w") as f:
        f.write("3\n")
    disks = cachedisks.CacheDisks(a.workdir, prefix, ctx.cg, ctx.td, ctx.log).make(d["limits"])
    text = render(server, prefix, servers.PORT, o.port)
    servers.check_config(server, ctx.binary(), prefix, text)
    ctx.cg.reset_peak()
    run = servers.start(server, ctx.binary(), prefix, text, ctx.cg, ctx.td)
    res = {"server": server}
    miss = None
    hot_paths = [entry_path(prefix, u) for u in hot]
    try:
        # 2. Warm-up: fill, then hit.
        t0 = time.time()
        before = o.log_size()
        for u in hot:
            load_one(u)
        time.sleep(1)
        for u in hot:
            load_one(u)
        subprocess.run(["sync"], check=False)
        res["warm_s"] = time.time() - t0
        seen = o.uris_since(before)
        res["warm_origin_requests"] = len(seen)
        res["hot_entries_where_expected"] = sum(os.path.exists(p) for p in hot_paths)
        log_mark = o.log_size()
        # 3. Unloaded.
        res["unloaded"] = hot_phases(ctx, prefix, "unloaded", lists, d, hot_paths)
        # 4. Loaded.
        miss_secs = d["warmup"] + 6 * a.d_seconds + 10
        c0 = Counts(disks, time.time()).as_dict()
        miss = load.OhaBackground(ctx.tools, servers.PORT, lists["miss"], MISS_CONNS,
                                  miss_secs, os.path.join(prefix, "oha-miss.json"),
                                  rate=d["miss_rate"])
        time.sleep(d["warmup"])
        c1 = Counts(disks, time.time()).as_dict()
        res["loaded"] = hot_phases(ctx, prefix, "loaded", lists, d, hot_paths)
        c2 = Counts(disks, time.time()).as_dict()
        # 5. Crawl.
        ctx.log(f"D: {server}: disk2 slowed to a crawl")
        disks.limit(2, d["crawl"])
        c3 = Counts(disks, time.time()).as_dict()
        res["crawl"] = hot_phases(ctx, prefix, "crawl", lists, d, hot_paths, only13=True)
        c4 = Counts(disks, time.time()).as_dict()
        res["miss"] = miss.wait(extra=miss_secs + 120)
        miss = None
        res["counts"] = {"before": c0, "warm": c1, "loaded": c2, "crawl_start": c3,
                         "crawl_end": c4}
        res["fill"] = {"loaded": fill_rate(c1, c2), "crawl": fill_rate(c3, c4),
                       "whole": fill_rate(c0, c4)}
        res["hot_origin_requests"] = sum(1 for u in o.uris_since(log_mark)
                                         if u.startswith("/hot/"))
        if server == "nowait":
            try:
                text = run.status()
            except OSError as e:
                res["status_error"] = str(e)
                ctx.log(f"D: nowait's status page did not answer: {e}")
                text = None
            if text is not None:
                with open(os.path.join(prefix, "status.txt"), "w") as f:
                    f.write(text)
                res["status"] = status.summarize(text)
                res["pools"] = pools(text)
                res["cache"] = cache_metrics(text)
        res["error_lines"] = error_summary(run.error_log())
        res["memory"] = ctx.cg.memory_stats()
    finally:
        if miss:
            miss.kill()
        disks.lift()
        stop_server(ctx, run)
    return res


def load_one(u):
    url = f"http://127.0.0.1:{servers.PORT}{u}"
    import urllib.request
    with urllib.request.urlopen(url, timeout=120) as r:
        r.read()


def stop_server(ctx, run):
    ctx.td.run_one(run.teardown_key)


def error_summary(text):
    """The error log's lines by level and first words (counts)."""
    out = {}
    for line in text.splitlines():
        m = re.match(r"\S+ \S+ \[(\w+)\] [^:]*: (?:\*\d+ )?(.{0,120})", line)
        if m:
            # Paths in the lab's work folder are named from the server's
            # prefix: the report names no folder of the machine it ran on.
            msg = re.sub(r"/\S*/run/[^/\s]+/", "PREFIX/", m.group(2))
            words = re.sub(r"[0-9a-f]{8,}|\d+", "N", msg)[:60]
            k = f"[{m.group(1)}] {words}"
            out[k] = out.get(k, 0) + 1
    return dict(sorted(out.items(), key=lambda kv: -kv[1])[:8])


def hot_phases(ctx, prefix, stage, lists, d, hot_paths, only13=False):
    """The hot phases of one stage: closed loop and constant rate, over all
    hot URLs and over those of disk1 and disk3."""
    a = ctx.a
    out = {}
    targets = [("d13", lists["hot13"])] if only13 else [("all", lists["hot"]),
                                                       ("d13", lists["hot13"])]
    samp = sampler.Sampler(ctx.cg, hot_paths)
    samp.start()
    try:
        for name, lst in targets:
            out[name] = {
                "closed": load.oha(ctx.tools, servers.PORT, lst, HOT_CONNS, a.d_seconds,
                                   os.path.join(prefix, f"oha-{stage}-{name}-closed.json")),
                "rate": load.oha(ctx.tools, servers.PORT, lst, HOT_CONNS, a.d_seconds,
                                 os.path.join(prefix, f"oha-{stage}-{name}-rate.json"),
                                 rate=d["hot_rate"]),
            }
    finally:
        out["loop_states"] = samp.stop()
        out["memory_stat"] = ctx.cg.memory_stat()
    return out


def run_D(ctx):
    a = ctx.a
    d = {
        "limits": cachedisks.Limits(a.d_riops, a.d_rbps, a.d_wiops, a.d_wbps, a.d_dirty),
        "crawl": cachedisks.Limits(a.d_crawl_iops, a.d_crawl_bps, a.d_crawl_iops,
                                   a.d_crawl_bps, a.d_dirty),
        "warmup": a.warmup,
        "miss_rate": a.d_miss_rate,
        "hot_rate": a.d_hot_rate,
    }
    ctx.cg.set_memory(a.d_mem_bytes)
    o = origin.Origin(a.workdir, servers.PORT + ORIGIN_PORT_OFFSET, ctx.td, ctx.log).start()
    hot = urls(a.d_hot, "hot", 11)
    hot13 = [u for u in hot if disk_of(u) != 2]
    miss_n = int(4 * a.d_miss_rate * (a.warmup + 6 * a.d_seconds + 10))
    lists = {
        "hot": write_list(os.path.join(ctx.run_dir, "d-hot.txt"), hot),
        "hot13": write_list(os.path.join(ctx.run_dir, "d-hot13.txt"), hot13),
        "miss": write_list(os.path.join(ctx.run_dir, "d-miss.txt"), urls(miss_n, "miss", 12)),
    }
    sizes = origin.class_sizes()
    hot_bytes = sum(sizes[u.split("/")[2]] for u in hot)
    out = {
        "settings": {
            "disk": d["limits"].text(), "crawl": d["crawl"].text(),
            "memory_limit": a.d_mem, "hot_urls": len(hot), "hot_urls_disk1_3": len(hot13),
            "hot_mb": hot_bytes / 1e6, "hot_per_disk": [sum(disk_of(u) == i for u in hot)
                                                       for i in (1, 2, 3)],
            "miss_rate": d["miss_rate"], "miss_mean_kb": origin.mean_size() / 1024,
            "miss_offered_mb_per_s": d["miss_rate"] * origin.mean_size() / 1e6,
            "hot_rate": d["hot_rate"], "seconds": a.d_seconds, "warmup": a.warmup,
            "classes": [f"{n} {s >> 10} KB {p * 100:.0f}%" for n, s, p in origin.CLASSES],
        },
        "runs": [],
    }
    ctx.log(f"D: hot set {len(hot)} URLs ({hot_bytes / 1e6:.1f} MB), "
            f"{len(hot13)} on disk1/disk3; miss load {d['miss_rate']} req/s "
            f"≈ {out['settings']['miss_offered_mb_per_s']:.0f} MB/s offered; disks: "
            f"{d['limits'].text()}")
    for server in a.d_servers:
        ctx.log(f"D: {server}")
        out["runs"].append(one_server(ctx, server, o, lists, hot, d))
    return out
