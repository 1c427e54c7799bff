#!/usr/bin/env python3
"""Checks the lab's diagnosis of nowait's fast path: does `cachestat()` count
pages that are still being read from the disk, and does a `sendfile()` of such
"cached" pages then wait for the disk?

Root only. Attaches the lab's quick image read-only on its own loop device
and mount, puts this process in a cgroup that throttles reads to 2 MB/s, and:
thread 1 starts reading a cold 4 MB file (takes ~2 s); meanwhile thread 2
asks cachestat() about the file, tries preadv2(RWF_NOWAIT) and times a
sendfile() of the first 512 KiB into /dev/null ... then tears down.
Usage: sudo python3 bench/lab/inflight.py IMAGE
"""

import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time

SYS_CACHESTAT = 451


class CacheStat(ctypes.Structure):
    _fields_ = [(n, ctypes.c_uint64) for n in
                ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")]


class Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


libc = ctypes.CDLL(None, use_errno=True)


def cachestat(fd, off, length):
    cs = CacheStat()
    r = libc.syscall(SYS_CACHESTAT, fd, ctypes.byref(Range(off, length)), ctypes.byref(cs), 0)
    if r != 0:
        raise OSError(ctypes.get_errno(), "cachestat")
    return cs.nr_cache


def main():
    image = sys.argv[1]
    mnt = tempfile.mkdtemp(prefix="nowait-lab-inflight-")
    cg = "/sys/fs/cgroup/blkio/nowait-lab-inflight"
    loop = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", "--read-only", image],
                          capture_output=True, text=True, check=True).stdout.strip()
    try:
        subprocess.run(["mount", "-o", "ro,noatime", loop, mnt], check=True)
        st = os.stat(loop)
        os.mkdir(cg)
        with open(cg + "/blkio.throttle.read_bps_device", "w") as f:
            f.write(f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)} 2000000\n")
        with open(cg + "/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        path = os.path.join(mnt, "a", "00042.bin")
        fd = os.open(path, os.O_RDONLY)
        size = os.fstat(fd).st_size
        pages = size // 4096
        print(f"before: cachestat says {cachestat(fd, 0, size)} of {pages} pages cached")
        t0 = time.time()
        reader = threading.Thread(target=lambda: os.pread(fd, size, 0))
        reader.start()
        time.sleep(0.3)
        n = cachestat(fd, 0, 512 * 1024)
        print(f"t={time.time() - t0:.2f}s reader busy: cachestat says {n} of 128 pages "
              f"of the first 512 KiB cached")
        try:
            got = os.preadv(fd, [bytearray(512 * 1024)], 0, os.RWF_NOWAIT)
            print(f"preadv2(RWF_NOWAIT) of those 512 KiB: {got} bytes")
        except BlockingIOError:
            print("preadv2(RWF_NOWAIT) of those 512 KiB: EAGAIN")
        null = os.open("/dev/null", os.O_WRONLY)
        t1 = time.time()
        sent = os.sendfile(null, fd, 0, 512 * 1024)
        print(f"sendfile() of those 512 KiB: {sent} bytes, waited {time.time() - t1:.2f} s")
        reader.join()
        print(f"reader done after {time.time() - t0:.2f} s")
        os.close(fd)
        os.close(null)
    finally:
        with open("/sys/fs/cgroup/blkio/cgroup.procs", "w") as f:
            f.write(str(os.getpid()))
        if os.path.isdir(cg):
            os.rmdir(cg)
        subprocess.run(["umount", mnt])
        os.rmdir(mnt)
        subprocess.run(["losetup", "-d", loop])


if __name__ == "__main__":
    main()
