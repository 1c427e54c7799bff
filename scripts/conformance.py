#!/usr/bin/env python3
"""Runs nginx's own test suite (a checkout of nginx/nginx-tests, kept outside
this repository) against nowait and against Debian's nginx, file by file, and
writes the per-file table into docs/conformance.md.

    scripts/conformance.py --tests ../nginx-tests            # the default file list
    scripts/conformance.py --tests ../nginx-tests rewrite.t  # some files only
    scripts/conformance.py --tests ../nginx-tests --no-write proxy.t

The default list is scripts/conformance-files.txt. Each file runs once with
TEST_NGINX_BINARY set to nowait's release binary and once with nginx; a test
counts as passed when its TAP line is `ok` (a `# SKIP` is counted apart).
The table's last column lists the tests nginx passes and nowait does not:
that is the work left.

Debian's nginx-light declares dynamic modules in `nginx -V` (geoip, perl,
xslt, image_filter, mail, stream) whose .so files it does not install; the
harness would then write `load_module` lines that make nginx fail to start.
nginx is therefore run through a small wrapper whose `-V` leaves out the
dynamic modules that are not installed; everything else is nginx itself.
"""

import argparse
import concurrent.futures
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BEGIN = "<!-- conformance:begin -->"
END = "<!-- conformance:end -->"
MODULES_DIR = "/usr/lib/nginx/modules"


def default_files():
    out = []
    with open(os.path.join(ROOT, "scripts", "conformance-files.txt")) as f:
        for line in f:
            line = line.split("#", 1)[0]
            out.extend(line.split())
    return out


def nginx_wrapper(nginx, tmp):
    """A script that is nginx, except that -V leaves out dynamic modules
    whose .so is not installed."""
    path = os.path.join(tmp, "nginx")
    with open(path, "w") as f:
        f.write(f"""#!/bin/sh
for a in "$@"; do
    if [ "$a" = "-V" ]; then
        {nginx} -V 2>&1 | python3 -c '
import os, re, sys
text = sys.stdin.read()
def keep(m):
    name = m.group(1)
    so = "ngx_" + name.replace("_module", "") + "_module.so"
    if name == "mail": so = "ngx_mail_module.so"
    if name == "stream": so = "ngx_stream_module.so"
    return m.group(0) if os.path.exists(os.path.join("{MODULES_DIR}", so)) else ""
sys.stderr.write(re.sub(r" --with-(\\S+?)=dynamic", keep, text))
'
        exit 0
    fi
done
exec {nginx} "$@"
""")
    os.chmod(path, 0o755)
    return path


TAP_LINE = re.compile(r"^(not )?ok (\d+)\b(.*)$")
PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#\s*(?:skip|SKIP)\w*\s*(.*))?$")


def parse_tap(text):
    """{number: 'pass'|'fail'|'skip'}, planned count, whole-file skip reason."""
    results = {}
    planned = None
    skip_all = None
    for line in text.splitlines():
        m = PLAN.match(line.strip())
        if m:
            planned = int(m.group(1))
            if m.group(2) is not None or planned == 0:
                skip_all = (m.group(2) or "").strip() or "skipped"
            continue
        m = TAP_LINE.match(line)
        if not m:
            continue
        num = int(m.group(2))
        rest = m.group(3)
        directive = ""
        if "#" in rest:
            directive = rest.split("#", 1)[1].strip().lower()
        if directive.startswith("skip"):
            results[num] = "skip"
        elif m.group(1):
            results[num] = "fail"
        else:
            results[num] = "pass"
    return results, planned, skip_all


def run_file(tests_dir, name, binary, timeout, user):
    env = dict(os.environ)
    env["TEST_NGINX_BINARY"] = binary
    for k in ("TEST_NGINX_VERBOSE", "TEST_NGINX_CATLOG", "TEST_NGINX_LEAVE"):
        env.pop(k, None)
    try:
        cmd = ["perl", "-Ilib", name]
        if user:
            # The suite is written for an unprivileged user: as root, nginx's
            # workers become `nobody` and cannot read the test's own folder.
            cmd = ["runuser", "-u", user, "--", "env", f"TEST_NGINX_BINARY={binary}"] + cmd
        p = subprocess.run(
            cmd,
            cwd=tests_dir,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout,
        )
        out = p.stdout.decode("utf-8", "replace")
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode("utf-8", "replace") + "\n# timed out\n"
    return parse_tap(out), out


def summary(res):
    results, planned, skip_all = res
    passed = sum(1 for r in results.values() if r == "pass")
    skipped = sum(1 for r in results.values() if r == "skip")
    return passed, planned or 0, skipped, skip_all


def cell(res):
    passed, planned, skipped, skip_all = summary(res)
    if skip_all is not None:
        return f"skipped ({skip_all})"
    s = f"{passed}/{planned}"
    if skipped:
        s += f" ({skipped} skipped)"
    return s


def gaps(nginx_res, nowait_res):
    """Test numbers nginx passes and nowait does not."""
    n_results = nginx_res[0]
    w_results = nowait_res[0]
    return [
        num
        for num, r in sorted(n_results.items())
        if r == "pass" and w_results.get(num) != "pass"
    ]


def write_table(path, rows, meta):
    lines = [
        BEGIN,
        "",
        meta,
        "",
        "| file | nginx 1.22.1 | nowait | nginx passes, nowait does not |",
        "|---|---|---|---|",
    ]
    tot = [0, 0, 0, 0]
    for name, n, w in rows:
        g = gaps(n, w)
        ns, ws = summary(n), summary(w)
        tot[0] += ns[0]
        tot[1] += ws[0]
        tot[2] += len(g)
        tot[3] += 1
        gap = ", ".join(str(x) for x in g) if g else ""
        if len(g) > 12:
            gap = ", ".join(str(x) for x in g[:12]) + f", … ({len(g)})"
        lines.append(f"| {name} | {cell(n)} | {cell(w)} | {gap} |")
    lines.append(
        f"| **{tot[3]} files** | **{tot[0]} passed** | **{tot[1]} passed** | **{tot[2]}** |"
    )
    lines += ["", END]
    table = "\n".join(lines)
    text = ""
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        text = head + table + tail
    else:
        text = text + "\n" + table + "\n"
    with open(path, "w") as f:
        f.write(text)


# Files that listen on fixed ports beyond the harness's own (8182, 8183 …):
# run alone, after the others.
RUN_ALONE = {"http_listen.t", "http_listen_wildcard.t"}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tests", required=True, help="a checkout of nginx/nginx-tests")
    ap.add_argument("--nowait", default=os.path.join(ROOT, "target", "release", "nowait"))
    ap.add_argument("--nginx", default="/usr/sbin/nginx")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=int, default=300, help="seconds per file")
    ap.add_argument("--output", default=os.path.join(ROOT, "docs", "conformance.md"))
    ap.add_argument("--no-write", action="store_true", help="print, do not write the table")
    ap.add_argument("--log", help="a folder to keep each run's TAP output in")
    ap.add_argument(
        "--user",
        default="nobody" if os.geteuid() == 0 else "",
        help="run the tests as this user (default when root: nobody)",
    )
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()

    tests_dir = os.path.abspath(a.tests)
    if not os.path.exists(os.path.join(tests_dir, "lib", "Test", "Nginx.pm")):
        sys.exit(f"{tests_dir} is not a checkout of nginx/nginx-tests")
    if a.nowait == os.path.join(ROOT, "target", "release", "nowait"):
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    nowait = os.path.abspath(a.nowait)
    if not os.access(a.nginx, os.X_OK):
        sys.exit(f"{a.nginx} is missing: run scripts/install-test-deps.sh as root")
    files = a.files or default_files()
    tmp = tempfile.mkdtemp(prefix="nowait-conformance-")
    os.chmod(tmp, 0o755)
    nginx = nginx_wrapper(a.nginx, tmp)
    if a.log:
        os.makedirs(a.log, exist_ok=True)

    results = {}

    def record(name, who, res, out):
        results[(name, who)] = res
        if a.log:
            with open(os.path.join(a.log, f"{name}.{who}.tap"), "w") as f:
                f.write(out)
        print(f"{name:40} {who:7} {cell(res)}", flush=True)

    together = [n for n in files if n not in RUN_ALONE]
    jobs = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=a.jobs) as ex:
        for name in together:
            for who, binary in (("nginx", nginx), ("nowait", nowait)):
                jobs.append((name, who, ex.submit(run_file, tests_dir, name, binary, a.timeout, a.user)))
        for name, who, fut in jobs:
            record(name, who, *fut.result())
    # Files that listen on fixed ports of their own run after the others,
    # one at a time: beside another file the harness finds their ports
    # taken and skips them, for nginx as for nowait.
    for name in (n for n in files if n in RUN_ALONE):
        for who, binary in (("nginx", nginx), ("nowait", nowait)):
            record(name, who, *run_file(tests_dir, name, binary, a.timeout, a.user))
    shutil.rmtree(tmp, ignore_errors=True)

    rows = [(name, results[(name, "nginx")], results[(name, "nowait")]) for name in files]
    commit = subprocess.run(
        ["git", "-C", tests_dir, "rev-parse", "--short", "HEAD"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ).stdout.decode().strip() or "unknown"
    version = subprocess.run([nowait, "-v"], stderr=subprocess.PIPE).stderr.decode().strip()
    meta = (
        f"Run {datetime.date.today().isoformat()} with `scripts/conformance.py`: "
        f"nginx-tests at `{commit}`, {version}, Debian's nginx 1.22.1 (`nginx-light`). "
        "A cell reads passed/planned; \"skipped\" is the harness's own reason "
        "(a module the binary does not have)."
    )
    if a.no_write:
        for name, n, w in rows:
            print(f"{name}: nginx {cell(n)}, nowait {cell(w)}, gaps {gaps(n, w)}")
    else:
        write_table(a.output, rows, meta)
        print(f"wrote {a.output}")


if __name__ == "__main__":
    main()
