"""Experiment D's three cache disks: an empty ext4 file system per disk, each
on its own loop device, mounted as PREFIX/disk1..3 (the brief's
configuration names its cache paths `disk1`, `disk2`, `disk3`, relative to
the server's prefix), each throttled on its own, and one of them slowed to a
crawl on demand.

A cache disk is written as much as it is read, so both directions are
slowed, and where the kernel accounts them:
- reads and direct writes in the servers' cgroup (`blkio.throttle.*` of
  cgroup v1, `io.max` of v2);
- writeback: cgroup v1 charges the flusher threads' writes to the root
  cgroup, so the same write limits go there too (v2 charges them to the
  cgroup that dirtied the pages);
- the dirty pages a disk may hold: `strict_limit` and `max_bytes` of the loop
  device's backing-device info, so that a writer that outruns the disk waits
  in the kernel (`balance_dirty_pages`) as it would in front of a real disk
  with a full write cache, instead of filling the machine's memory.

What this module must not do: leave a loop device, a mount or a limit
behind. Every attach, mount and root-cgroup limit is recorded in the
`Teardown` and undone in reverse order.
"""

import os

import cgroup
import disk

# Each disk's image; sparse, so only what is written takes space.
IMAGE_MB = 2048
# The root cgroup's v1 blkio directory (writeback is charged there).
ROOT_BLKIO = os.path.join(cgroup.ROOT, "blkio")


class Limits:
    """One disk's throttle: read and write IOPS and bytes/s, and how many
    dirty bytes it may hold before writers wait."""

    def __init__(self, riops, rbps, wiops, wbps, dirty_bytes):
        self.riops, self.rbps = riops, rbps
        self.wiops, self.wbps = wiops, wbps
        self.dirty_bytes = dirty_bytes

    def text(self):
        return (f"read {self.riops} IOPS {self.rbps / 1e6:g} MB/s, write {self.wiops} IOPS "
                f"{self.wbps / 1e6:g} MB/s, at most {self.dirty_bytes >> 20} MB dirty")


def _write(path, value):
    with open(path, "w") as f:
        f.write(str(value) + "\n")


class CacheDisks:
    """Three fresh, mounted, throttled disks under `prefix`."""

    def __init__(self, workdir, prefix, cg, teardown, log, count=3):
        self.workdir = workdir
        self.prefix = prefix
        self.cg = cg
        self.td = teardown
        self.log = log
        self.count = count
        self.loops = []
        self.mounts = []

    def make(self, limits):
        """Makes an empty file system per disk, mounts it, applies `limits`."""
        images = os.path.join(self.workdir, "images")
        os.makedirs(images, exist_ok=True)
        for i in range(1, self.count + 1):
            img = os.path.join(images, f"cache-disk{i}.img")
            if os.path.exists(img):
                os.unlink(img)
            with open(img, "wb") as f:
                f.truncate(IMAGE_MB * 1024 * 1024)
            disk.sh("mkfs.ext4", "-q", "-F", "-m", "0",
                    "-E", "lazy_itable_init=0,lazy_journal_init=0", img)
            loop = disk.sh("losetup", "--find", "--show", "--direct-io=on", img, capture=True)
            self.td.push(f"detach {loop}", lambda d=loop: disk.sh("losetup", "-d", d, check=False))
            self.td.push(f"remove {img}", lambda p=img: os.path.exists(p) and os.unlink(p))
            mnt = os.path.join(self.prefix, f"disk{i}")
            os.makedirs(mnt, exist_ok=True)
            disk.sh("mount", "-o", "noatime", loop, mnt)
            self.td.push(f"unmount {mnt}",
                         lambda m=mnt: os.path.ismount(m) and disk.sh("umount", m, check=False))
            # nginx's cache loader would try (and fail) to walk it.
            os.rmdir(os.path.join(mnt, "lost+found"))
            os.chown(mnt, disk.RUN_USER, disk.RUN_GROUP)
            os.chmod(mnt, 0o700)
            self.loops.append(loop)
            self.mounts.append(mnt)
        for i in range(1, self.count + 1):
            self.limit(i, limits)
        return self

    def majmin(self, i):
        st = os.stat(self.loops[i - 1])
        return f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"

    def limit(self, i, lim):
        """Applies `lim` to disk `i` (1-based), replacing what it had."""
        mm = self.majmin(i)
        self.cg.throttle(mm, lim.riops, lim.rbps, lim.wiops, lim.wbps)
        if not self.cg.v2 and os.path.isdir(ROOT_BLKIO):
            for f, v in (("write_iops_device", lim.wiops), ("write_bps_device", lim.wbps)):
                path = os.path.join(ROOT_BLKIO, "blkio.throttle." + f)
                _write(path, f"{mm} {v}")
                self.td.push(f"lift {f} of {mm} in the root cgroup",
                             lambda p=path, m=mm: _write(p, f"{m} 0"))
        bdi = f"/sys/class/bdi/{mm}"
        _write(os.path.join(bdi, "strict_limit"), 1)
        _write(os.path.join(bdi, "max_bytes"), lim.dirty_bytes)

    def lift(self):
        """Removes every limit (to look at the disks afterwards)."""
        for i in range(1, self.count + 1):
            mm = self.majmin(i)
            self.cg.throttle(mm, 0, 0, 0, 0)
            if not self.cg.v2 and os.path.isdir(ROOT_BLKIO):
                for f in ("write_iops_device", "write_bps_device"):
                    _write(os.path.join(ROOT_BLKIO, "blkio.throttle." + f), f"{mm} 0")

    def io(self, i):
        """Disk `i`'s reads and writes so far (IOs and bytes), the servers'
        cgroup and (v1) the root's writeback together."""
        mm = self.majmin(i)
        dirs = [self.cg.dirs[-1]] + ([ROOT_BLKIO] if not self.cg.v2 else [])
        out = {"read_ios": 0, "write_ios": 0, "read_bytes": 0, "write_bytes": 0}
        for d in dirs:
            if self.cg.v2:
                path = os.path.join(d, "io.stat")
                if not os.path.exists(path):
                    continue
                for line in open(path):
                    if line.startswith(mm + " "):
                        kv = dict(x.split("=") for x in line.split()[1:])
                        out["read_ios"] += int(kv.get("rios", 0))
                        out["write_ios"] += int(kv.get("wios", 0))
                        out["read_bytes"] += int(kv.get("rbytes", 0))
                        out["write_bytes"] += int(kv.get("wbytes", 0))
                continue
            for f, unit in (("blkio.throttle.io_serviced", "ios"),
                            ("blkio.throttle.io_service_bytes", "bytes")):
                for line in open(os.path.join(d, f)):
                    parts = line.split()
                    if len(parts) == 3 and parts[0] == mm and parts[1] in ("Read", "Write"):
                        out[f"{parts[1].lower()}_{unit}"] += int(parts[2])
        return out

    def entries(self, i):
        """(entries, bytes, temp files) on disk `i`: files named as nginx and
        nowait name cache entries (32 hex digits) and the rest."""
        n = size = temps = 0
        for root, _dirs, files in os.walk(self.mounts[i - 1]):
            for f in files:
                if len(f) == 32 and all(c in "0123456789abcdef" for c in f):
                    try:
                        size += os.stat(os.path.join(root, f)).st_size
                    except FileNotFoundError:  # removed since it was listed
                        continue
                    n += 1
                elif f != "lost+found":
                    temps += 1
        return n, size, temps


def lift_root_limits(dev):
    """Removes the root cgroup's write limits of loop device `dev` (what a
    killed run may have left)."""
    if not os.path.isdir(ROOT_BLKIO) or not os.path.exists(dev):
        return
    st = os.stat(dev)
    mm = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    for f in ("write_iops_device", "write_bps_device"):
        path = os.path.join(ROOT_BLKIO, "blkio.throttle." + f)
        with open(path) as cur:
            if any(line.split()[0] == mm for line in cur if line.strip()):
                _write(path, f"{mm} 0")
