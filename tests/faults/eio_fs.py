#!/usr/bin/env python3
"""A read-only FUSE filesystem of one file that can start failing.

    eio_fs.py MOUNTPOINT FLAG

serves `big.bin` (SIZE bytes of 0x42) at MOUNTPOINT; once the file FLAG
exists every read of it fails with EIO (errno 5), as a disk that dies in
the middle of a response. Used by tests/faults.rs on every kernel (with
device-mapper's `error` target besides where the kernel has it). Needs
fusepy (`pip install fusepy`) and libfuse2; runs in the foreground until
unmounted.
"""
import errno
import os
import stat
import sys
import time

from fuse import FUSE, FuseOSError, Operations

SIZE = 32 << 20
NAME = "/big.bin"


class FailingFs(Operations):
    def __init__(self, flag):
        self.flag = flag
        self.t = time.time()

    def getattr(self, path, fh=None):
        times = dict(st_atime=self.t, st_mtime=self.t, st_ctime=self.t)
        if path == "/":
            return dict(st_mode=stat.S_IFDIR | 0o755, st_nlink=2, st_size=0, **times)
        if path == NAME:
            return dict(st_mode=stat.S_IFREG | 0o644, st_nlink=1, st_size=SIZE, **times)
        raise FuseOSError(errno.ENOENT)

    def readdir(self, path, fh):
        return [".", "..", NAME[1:]]

    def open(self, path, flags):
        if path != NAME:
            raise FuseOSError(errno.ENOENT)
        return 0

    def read(self, path, size, offset, fh):
        if os.path.exists(self.flag):
            raise FuseOSError(errno.EIO)
        return b"\x42" * max(0, min(size, SIZE - offset))


if __name__ == "__main__":
    mount, flag = sys.argv[1], sys.argv[2]
    FUSE(FailingFs(flag), mount, foreground=True, allow_other=True, ro=True)
