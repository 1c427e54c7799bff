"""The two servers under test, started one at a time inside the lab's cgroup
from one configuration text.

nginx and nowait get the same file except for what only one of them accepts:
nginx's `*_temp_path` directives (nowait refuses them: it has no request
bodies to buffer yet), and nowait's `aio_fast_path` and `nowait_status`
(nginx does not know them). Both run in the foreground (`daemon off;`) as the
child of a tiny `sh` that writes its own pid into the cgroup and then execs
the server, so that every process and thread the server ever makes is born
inside the cgroup.
"""

import os
import shlex
import signal
import socket
import subprocess
import time
import ssl
import urllib.request

NGINX = "/usr/sbin/nginx"
# The port both servers listen on (127.0.0.1 only); --port changes it.
PORT = 28480
# TLS (`lab.sh --tls`): the certificate and key both servers present, as
# (cert, key) paths; None serves cleartext.
TLS = None
# nginx's temporary directories, under the run's prefix (nginx only).
TEMP_DIRS = ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")


def scheme():
    """The servers' URL scheme: https under --tls."""
    return "https" if TLS else "http"


def url(path):
    """The URL of `path` on the server under test."""
    return f"{scheme()}://127.0.0.1:{PORT}{path}"


def get(path, timeout=120):
    """GET `path` from the server under test (the test certificate is not
    checked: the lab measures, it does not authenticate)."""
    ctx = None
    if TLS:
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
    with urllib.request.urlopen(url(path), timeout=timeout, context=ctx) as r:
        return r.read()


def render(server, prefix, root, aio, fast_path=True, accept_mutex="off",
           reuseport=False, access_log=None, extra_locations=""):
    """The configuration text for `server` ("nginx" or "nowait").

    aio: "off" or "threads". fast_path: nowait's aio_fast_path (ignored for
    nginx and for aio off). access_log: None for `access_log off;`, or a
    log_format string logged to PREFIX/access.log.
    """
    lines = [
        "worker_processes 2;",
        "daemon off;",
        "user nobody nogroup;",
        f"pid {prefix}/server.pid;",
        f"error_log {prefix}/error.log warn;",
        "events {",
        "    worker_connections 2048;",
        f"    accept_mutex {accept_mutex};",
        "}",
        "http {",
        "    default_type application/octet-stream;",
        "    sendfile on;",
        "    sendfile_max_chunk 512k;",
    ]
    if access_log is None:
        lines.append("    access_log off;")
    else:
        lines.append(f"    log_format w '{access_log}';")
        lines.append(f"    access_log {prefix}/access.log w;")
    if server == "nginx":
        for t in TEMP_DIRS:
            lines.append(f"    {t}_temp_path {prefix}/{t}_temp;")
    listen = f"127.0.0.1:{PORT}" + (" reuseport" if reuseport else "") + (" ssl" if TLS else "")
    lines += [
        "    server {",
        f"        listen {listen};",
        f"        root {root};",
    ]
    if TLS:
        # As a site would: TLS 1.2 and 1.3, sessions shared by the workers.
        lines += [
            f"        ssl_certificate {TLS[0]};",
            f"        ssl_certificate_key {TLS[1]};",
            "        ssl_protocols TLSv1.2 TLSv1.3;",
            "        ssl_session_cache shared:SSL:10m;",
        ]
    lines.append("        location / {")
    if aio == "threads":
        lines.append("            aio threads;")
        if server == "nowait" and not fast_path:
            lines.append("            aio_fast_path off;")
    lines.append("        }")
    if extra_locations:
        lines.append(extra_locations)
    if server == "nowait":
        lines.append("        location = /nowait_status { nowait_status; }")
    lines += ["    }", "}", ""]
    return "\n".join(lines)


class Running:
    """A started server."""

    def __init__(self, server, proc, prefix, cgroup):
        self.server = server
        self.proc = proc
        self.prefix = prefix
        self.cgroup = cgroup

    def stop(self):
        """SIGTERM (fast shutdown for both), then SIGKILL whatever is left."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.cgroup.kill_all()

    def status(self, timeout=30):
        """nowait's status page as text (nowait only)."""
        return get("/nowait_status", timeout).decode()

    def error_log(self):
        p = os.path.join(self.prefix, "error.log")
        if not os.path.exists(p):
            return ""
        with open(p, errors="replace") as f:
            return f.read()


def port_busy():
    """Whether something already listens on the port (then a readiness check
    would be answered by someone else's server)."""
    try:
        socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
        return True
    except OSError:
        return False


def start(server, binary, prefix, conf_text, cgroup, teardown):
    """Writes the configuration, starts the server in the cgroup, waits until
    it accepts connections."""
    os.makedirs(prefix, exist_ok=True)
    for t in TEMP_DIRS:
        os.makedirs(os.path.join(prefix, f"{t}_temp"), exist_ok=True)
    conf = os.path.join(prefix, "server.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    if port_busy():
        raise RuntimeError(f"127.0.0.1:{PORT} is already in use by another program; "
                           "choose another with --port")
    exe = NGINX if server == "nginx" else binary
    enter = "; ".join(f"echo $$ > {shlex.quote(p)}" for p in cgroup.procs_files())
    cmd = ["sh", "-c", enter + '; exec "$@"', "sh", exe, "-p", prefix + "/",
           "-c", conf, "-e", os.path.join(prefix, "error.log")]
    out = open(os.path.join(prefix, "stdout.log"), "w")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    run = Running(server, proc, prefix, cgroup)
    key = teardown.push(f"stop {server} pid {proc.pid}", run.stop)
    run.teardown_key = key
    deadline = time.time() + 15
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{server} exited with {proc.returncode}:\n"
                               + open(os.path.join(prefix, "stdout.log")).read()
                               + run.error_log())
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=0.5).close()
            return run
        except OSError:
            time.sleep(0.1)
    run.stop()
    raise RuntimeError(f"{server} did not start listening")


def check_config(server, binary, prefix, conf_text):
    """`-t` of the configuration, so a bad template fails before any load."""
    os.makedirs(prefix, exist_ok=True)
    for t in TEMP_DIRS:
        os.makedirs(os.path.join(prefix, f"{t}_temp"), exist_ok=True)
    conf = os.path.join(prefix, "check.conf")
    with open(conf, "w") as f:
        f.write(conf_text)
    exe = NGINX if server == "nginx" else binary
    r = subprocess.run([exe, "-t", "-p", prefix + "/", "-c", conf,
                        "-e", os.path.join(prefix, "error.log")],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{server} -t failed:\n{r.stdout}{r.stderr}\n{conf_text}")
