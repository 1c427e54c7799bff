"""Reading nowait's status page (Prometheus text) into the figures the report
shows: the loop's blocked time, the fast-path hit ratio, the pools."""

import re

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)$')
LABEL = re.compile(r'(\w+)="([^"]*)"')


def parse(text):
    """[(name, {label: value}, float)] for every sample."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = LINE.match(line)
        if not m:
            continue
        labels = dict(LABEL.findall(m.group(2) or ""))
        try:
            out.append((m.group(1), labels, float(m.group(3))))
        except ValueError:
            pass
    return out + quantiles_from_buckets(out)


def _le(v):
    return float("inf") if v == "+Inf" else float(v)


def quantiles_from_buckets(samples):
    """[(name, labels + {quantile}, seconds)] for every histogram series in
    `samples` (`_bucket` lines), so that readers written for the former
    summaries (quantile="0.5", "0.99", "0.999", "1") keep working. A
    quantile is interpolated inside its bucket, as Prometheus's
    histogram_quantile does; "1" (the maximum) is the upper bound of the
    highest bucket that holds a value, so it is at most one bucket high."""
    series = {}
    for n, l, v in samples:
        if n.endswith("_bucket") and "le" in l:
            key = (n[:-len("_bucket")], tuple(sorted((k, x) for k, x in l.items() if k != "le")))
            series.setdefault(key, []).append((_le(l["le"]), v))
    out = []
    for (name, labels), buckets in series.items():
        buckets.sort()
        total = buckets[-1][1] if buckets else 0
        if not total:
            continue
        for q in ("0.5", "0.99", "0.999", "1"):
            out.append((name, dict(labels, quantile=q), bucket_quantile(float(q), buckets)))
    return out


def bucket_quantile(q, buckets):
    """The q-quantile (seconds) of cumulative `buckets` [(le, count)]."""
    total = buckets[-1][1]
    finite = [b for b in buckets if b[0] != float("inf")]
    if q >= 1.0:
        below = 0.0
        for le, c in finite:
            if c >= total:
                return le
            below = le
        return below
    rank = q * total
    lo, before = 0.0, 0.0
    for le, c in buckets:
        if c >= rank:
            if le == float("inf"):
                return lo
            return lo + (le - lo) * ((rank - before) / (c - before) if c > before else 1.0)
        lo, before = le, c
    return lo


def pick(samples, name, **want):
    return [(l, v) for n, l, v in samples if n == name
            and all(l.get(k) == str(x) for k, x in want.items())]


def requests_per_worker(text):
    return {l["worker"]: v for l, v in pick(parse(text), "nowait_requests_total")}


def summarize(text):
    """The figures for the report, taken over all workers (the worst worker's
    quantile for the loop's blocked time: the loop that stalls is the one
    whose connections suffer)."""
    s = parse(text)
    out = {}
    for metric, key in (("nowait_loop_poll_seconds", "poll"),
                        ("nowait_loop_lag_seconds", "lag"),
                        ("nowait_loop_turn_seconds", "turn"),
                        ("nowait_ttfb_seconds", "ttfb")):
        for q, qk in (("0.5", "p50"), ("0.99", "p99"), ("0.999", "p999"), ("1", "max")):
            vals = [v for _, v in pick(s, metric, quantile=q)]
            if vals:
                out[f"{key}_{qk}"] = max(vals)
    # The exact maxima (to 1%) where the server exports them, instead of
    # the upper bound of the highest bucket.
    for metric, key in (("nowait_loop_poll_max_seconds", "poll"),
                        ("nowait_loop_turn_max_seconds", "turn")):
        vals = [v for _, v in pick(s, metric)]
        if vals:
            out[f"{key}_max"] = max(vals)
            out["max_exact"] = True
    fast = {}
    for l, v in pick(s, "nowait_fast_path_total"):
        k = (l["op"], l["result"])
        fast[k] = fast.get(k, 0) + v
    ops = sorted({op for op, _ in fast})
    out["fast"] = {op: {r: fast.get((op, r), 0) for r in ("hit", "miss", "unsupported")}
                   for op in ops}
    hits = sum(v for (op, r), v in fast.items() if r == "hit")
    tries = sum(fast.values())
    out["fast_hit_ratio"] = hits / tries if tries else None
    for metric, key in (("nowait_pool_tasks_total", "pool_tasks"),
                        ("nowait_pool_overflows_total", "pool_overflows"),
                        ("nowait_pool_front_lane_total", "pool_front"),
                        ("nowait_pool_promoted_total", "pool_promoted"),
                        ("nowait_pinned_files", "pinned_files"),
                        ("nowait_pinned_bytes", "pinned_bytes"),
                        ("nowait_pins_dropped_total", "pins_dropped")):
        out[key] = sum(v for _, v in pick(s, metric))
    out["body_bytes"] = {l["path"]: v for l, v in pick(s, "nowait_body_bytes_total")}
    qw = [v for _, v in pick(s, "nowait_pool_queue_wait_seconds", quantile="0.99")]
    out["pool_queue_wait_p99"] = max(qw) if qw else None
    out["requests_per_worker"] = requests_per_worker(text)
    return out
