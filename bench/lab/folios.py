"""How a file's resident pages sit in the page cache: the number of folios
they make up (a folio is the unit the page cache holds and `sendfile()`
pays for one by one: a 4 MB file read in by a reader usually sits in a few
dozen large folios, one faulted in page by page in a thousand 4 KiB ones).

Counted as the project's regression test counts it (src/sys/file.rs,
`folios_of`): the file is mapped, each resident page (`mincore`) is touched,
its frame is read from /proc/self/pagemap and its flags from
/proc/kpageflags; a page that is not a compound page's tail starts a folio.
Pages that are not resident are left alone (touching them would read them).
Root only (frame numbers are hidden from others)."""

import ctypes
import ctypes.util
import mmap
import os
import struct

PAGE = 4096
KPF_COMPOUND_TAIL = 1 << 16
PROT_READ = 1
MAP_SHARED = 1

_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_libc.mmap.restype = ctypes.c_void_p
_libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int,
                       ctypes.c_int, ctypes.c_long]
_libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
_libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]


def count(path):
    """(resident pages, folios they make up) of `path`, or None where it
    cannot be read (not root, an empty file)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return None
        pages = (size + PAGE - 1) // PAGE
        addr = _libc.mmap(None, size, PROT_READ, MAP_SHARED, fd, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            vec = ctypes.create_string_buffer(pages)
            if _libc.mincore(addr, size, vec) != 0:
                return None
            present = vec.raw
            resident, folios = 0, 0
            with open("/proc/self/pagemap", "rb", buffering=0) as pm, \
                    open("/proc/kpageflags", "rb", buffering=0) as kf:
                for i in range(pages):
                    if not present[i] & 1:
                        continue
                    ctypes.string_at(addr + i * PAGE, 1)  # a minor fault: maps the cached page
                    pm.seek((addr // PAGE + i) * 8)
                    entry = struct.unpack("=Q", pm.read(8))[0]
                    pfn = entry & ((1 << 55) - 1)
                    if entry >> 63 == 0 or pfn == 0:
                        continue
                    kf.seek(pfn * 8)
                    flags = struct.unpack("=Q", kf.read(8))[0]
                    resident += 1
                    if not flags & KPF_COMPOUND_TAIL:
                        folios += 1
            return resident, folios
        finally:
            _libc.munmap(addr, size)
    except OSError:
        return None
    finally:
        os.close(fd)


if __name__ == "__main__":
    import sys
    for p in sys.argv[1:]:
        print(p, count(p))
