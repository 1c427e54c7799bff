"""The slow disk: an ext4 image on a loop device, and the two data sets on it.

The image is made once per data-set shape and kept under the work directory
(git-ignored); every run attaches it with `losetup --direct-io=on` (so reads
reach the backing file, not the host's page cache of it), mounts it, and
unmounts + remounts before each measured run to empty the page, dentry and
inode caches of the file system.

What this module must not do: leave a loop device or a mount behind. Every
attach and mount is recorded in the `Teardown` given to it, which undoes them
in reverse order (also on SIGINT/SIGTERM, see lab.py).
"""

import hashlib
import json
import math
import os
import random
import subprocess
import time

# The image's manifest, at the root of the file system: what was generated,
# so a cached image is reused only for the same shape.
MANIFEST = ".lab-manifest.json"
# Set A's hot file (excluded from the random URLs).
HOT_A = "/a/hot.bin"
# How many files of set B form the hot set.
HOT_B_FILES = 100
# The user and group the servers run as (`user nobody nogroup;`); the data is
# owned by them (see LAB.md: cachestat() answers only a file's owner).
RUN_USER, RUN_GROUP = 65534, 65534


def sh(*args, check=True, capture=False):
    """Runs a command; its stderr goes to ours."""
    r = subprocess.run(list(args), check=check, text=True,
                       stdout=subprocess.PIPE if capture else None)
    return r.stdout.strip() if capture else r.returncode


def b_name(i):
    """Set B's path for file i, as a proxy cache with `levels=1:2` lays it out."""
    h = hashlib.md5(f"/object/{i}".encode()).hexdigest()
    return f"/b/{h[-1]}/{h[-3:-1]}/{h}"


def b_size(rng):
    """A set-B file size: 90% log-uniform in 4–60 KB, 10% 60–256 KB."""
    if rng.random() < 0.9:
        lo, hi = 4 * 1024, 60 * 1024
    else:
        lo, hi = 60 * 1024, 256 * 1024
    return int(math.exp(rng.uniform(math.log(lo), math.log(hi))))


class DataSpec:
    """The shape of the data sets; the image file's name is derived from it."""

    def __init__(self, a_files, a_file_mb, b_files):
        self.a_files = a_files
        self.a_file_mb = a_file_mb
        self.b_files = b_files

    def key(self):
        return f"a{self.a_files}x{self.a_file_mb}m-b{self.b_files}"

    def as_dict(self):
        return {"a_files": self.a_files, "a_file_mb": self.a_file_mb,
                "b_files": self.b_files, "hot_b_files": HOT_B_FILES, "version": 1}

    def image_mb(self):
        # Set B averages ~30 KB of data plus a 4 KB block and an inode; 25% slack.
        data = self.a_files * self.a_file_mb + self.b_files * 48 // 1024
        return int(data * 1.25) + 256


class Disk:
    """The attached, mounted image."""

    def __init__(self, workdir, spec, teardown, log):
        self.workdir = workdir
        self.spec = spec
        self.teardown = teardown
        self.log = log
        self.image = os.path.join(workdir, "images", spec.key() + ".img")
        self.mnt = None
        self.loop = None

    # -- attach / mount -------------------------------------------------------
    def attach(self):
        fresh = not self._image_ok()
        if fresh:
            self._make_image()
        self.loop = sh("losetup", "--find", "--show", "--direct-io=on",
                       self.image, capture=True)
        self.teardown.push(f"detach {self.loop}",
                           lambda dev=self.loop: sh("losetup", "-d", dev, check=False))
        self.mnt = os.path.join(self.workdir, "mnt")
        os.makedirs(self.mnt, exist_ok=True)
        self.mount()
        self.teardown.push(f"unmount {self.mnt}", self._umount_if_mounted)
        if fresh:
            self._fill()
        with open(os.path.join(self.mnt, MANIFEST)) as f:
            if json.load(f).get("complete") is not True:
                raise SystemExit("lab: image incomplete; delete it and run again")
        return self

    def majmin(self):
        st = os.stat(self.loop)
        return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"

    def mount(self):
        sh("mount", "-o", "noatime", self.loop, self.mnt)

    def _umount_if_mounted(self):
        if self.mnt and os.path.ismount(self.mnt):
            sh("umount", self.mnt, check=False)

    def cold(self):
        """Empties the page, dentry and inode caches of the lab's file system."""
        sh("umount", self.mnt)
        sh("blockdev", "--flushbufs", self.loop, check=False)
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        self.mount()

    # -- the image ------------------------------------------------------------
    def _image_ok(self):
        meta = self.image + ".json"
        if not (os.path.exists(self.image) and os.path.exists(meta)):
            return False
        with open(meta) as f:
            return json.load(f) == dict(self.spec.as_dict(), complete=True)

    def _make_image(self):
        os.makedirs(os.path.dirname(self.image), exist_ok=True)
        for p in (self.image, self.image + ".json"):
            if os.path.exists(p):
                os.unlink(p)
        mb = self.spec.image_mb()
        self.log(f"making a {mb} MB ext4 image for {self.spec.key()}")
        with open(self.image, "wb") as f:
            f.truncate(mb * 1024 * 1024)
        inodes = self.spec.b_files + self.spec.a_files + 20000
        sh("mkfs.ext4", "-q", "-F", "-m", "0", "-N", str(inodes),
           "-E", "lazy_itable_init=0,lazy_journal_init=0", self.image)

    def _fill(self):
        """Writes both data sets (unthrottled: the lab's cgroup holds only servers)."""
        t0 = time.time()
        s = self.spec
        a = os.path.join(self.mnt, "a")
        os.makedirs(a)
        chunk = 1024 * 1024
        names = ["hot.bin"] + [f"{i:05d}.bin" for i in range(s.a_files - 1)]
        for n in names:
            with open(os.path.join(a, n), "wb") as f:
                for _ in range(s.a_file_mb):
                    f.write(os.urandom(chunk))
        self.log(f"set A: {len(names)} x {s.a_file_mb} MB in {time.time() - t0:.0f} s")
        rng = random.Random(5)
        total = 0
        for i in range(s.b_files):
            p = self.mnt + b_name(i)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            n = b_size(rng)
            total += n
            with open(p, "wb") as f:
                f.write(os.urandom(n))
        self.log(f"set B: {s.b_files} files, {total / 1e6:.0f} MB")
        for root, dirs, files in os.walk(self.mnt):
            for d in dirs:
                os.chown(os.path.join(root, d), RUN_USER, RUN_GROUP)
                os.chmod(os.path.join(root, d), 0o755)
            for fn in files:
                os.chown(os.path.join(root, fn), RUN_USER, RUN_GROUP)
                os.chmod(os.path.join(root, fn), 0o644)
        os.chmod(self.mnt, 0o755)
        manifest = dict(s.as_dict(), complete=True, b_bytes=total)
        with open(os.path.join(self.mnt, MANIFEST), "w") as f:
            json.dump(manifest, f)
        os.sync()
        with open(self.image + ".json", "w") as f:
            json.dump(dict(s.as_dict(), complete=True), f)
        self.log(f"data written in {time.time() - t0:.0f} s")

    def manifest(self):
        with open(os.path.join(self.mnt, MANIFEST)) as f:
            return json.load(f)

    # -- URL lists --------------------------------------------------------------
    def url_lists(self, outdir):
        """Writes the URL lists the load generators read; returns their paths."""
        s = self.spec
        lists = {
            "a_random": [f"/a/{i:05d}.bin" for i in range(s.a_files - 1)],
            "a_hot": [HOT_A],
            "b_random": [b_name(i) for i in range(s.b_files)],
            "b_hot": [b_name(i) for i in range(HOT_B_FILES)],
        }
        paths = {}
        for name, urls in lists.items():
            p = os.path.join(outdir, name + ".txt")
            with open(p, "w") as f:
                f.write("\n".join(urls) + "\n")
            paths[name] = p
        return paths
