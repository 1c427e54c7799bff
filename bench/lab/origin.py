"""Experiment D's origin: Debian's nginx, outside the servers' cgroup (neither
throttled nor memory-limited), answering every URL `/<anything>/<class>/<n>`
with the body of size class `<class>` and `Cache-Control: max-age=86400`
(`expires 1d`), so every response may be cached and each URL is its own
cache key. Its access log (`$request_uri` a line) says which URLs reached
it: a hot URL there after the warm-up is a hit that did not happen.

What this module must not do: leave its nginx running (the `Teardown`
stops it).
"""

import os
import signal
import socket
import subprocess
import time

# Body size classes: (name, bytes, share of the miss load). Mostly small, as
# a CDN's objects (90% of the source's cache hits are under 60 KB), with a
# tail of large ones.
CLASSES = [("8k", 8 << 10, 0.40), ("32k", 32 << 10, 0.35), ("128k", 128 << 10, 0.20),
           ("512k", 512 << 10, 0.05)]


def class_sizes():
    return {name: size for name, size, _ in CLASSES}


def mean_size():
    return sum(size * share for _, size, share in CLASSES)


class Origin:
    def __init__(self, workdir, port, teardown, log):
        self.dir = os.path.join(workdir, "origin")
        self.port = port
        self.td = teardown
        self.log = log
        self.proc = None

    def start(self):
        root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(self.dir, "logs"), exist_ok=True)
        os.makedirs(root, exist_ok=True)
        for name, size, _ in CLASSES:
            p = os.path.join(root, name + ".bin")
            if not os.path.exists(p) or os.path.getsize(p) != size:
                with open(p, "wb") as f:
                    f.write(os.urandom(size))
        try:
            socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
            raise RuntimeError(f"127.0.0.1:{self.port} (the origin's port) is already in use")
        except OSError:
            pass
        conf = os.path.join(self.dir, "origin.conf")
        with open(conf, "w") as f:
            f.write(f"""worker_processes 1;
daemon off;
pid {self.dir}/origin.pid;
error_log {self.dir}/logs/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format uri '$request_uri';
    access_log {self.dir}/logs/access.log uri;
    default_type application/octet-stream;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{self.port};
        root {root};
        location / {{
            rewrite ^/[^/]+/(\\w+)/ /$1.bin break;
            expires 1d;
        }}
    }}
}}
""")
        out = open(os.path.join(self.dir, "logs", "stdout.log"), "w")
        self.proc = subprocess.Popen(
            ["/usr/sbin/nginx", "-p", self.dir + "/", "-c", conf],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self.td.push(f"stop the origin (pid {self.proc.pid})", self.stop)
        deadline = time.time() + 10
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("the origin nginx exited:\n"
                                   + open(os.path.join(self.dir, "logs", "error.log")).read())
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the origin nginx did not start listening")

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_size(self):
        p = os.path.join(self.dir, "logs", "access.log")
        return os.path.getsize(p) if os.path.exists(p) else 0

    def uris_since(self, offset):
        """The URLs requested since the log had `offset` bytes."""
        time.sleep(0.3)  # nginx writes each line at the end of its request
        p = os.path.join(self.dir, "logs", "access.log")
        with open(p) as f:
            f.seek(offset)
            return [line.strip() for line in f if line.strip()]
