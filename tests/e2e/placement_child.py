"""A process with the memory a placement test asks for, made with the real syscalls (ctypes):

    placement_child.py SPEC...      prints one JSON line {name: start address (hex)}, then waits
                                    until its stdin closes, so the test reads it while it lives

SPEC is one of
    thp:MB                 an anonymous region of MB MiB, 2 MiB aligned, MADV_HUGEPAGE, touched
    hugetlb:N              N 2 MiB hugetlb pages (MAP_HUGETLB), touched (the pool must have them)
    policy:NAME:MODE:FLAGS:NODES
                           64 KiB under mbind(MODE, FLAGS, NODES), touched; MODE is a number
                           (MPOL_*), FLAGS the MPOL_F_* bits, NODES comma-separated ids or ""
    anon:KB                KB KiB anonymous, touched
    untouched:KB           KB KiB anonymous, never touched (nothing resident)
    maps:N                 N pages whose protection alternates, so they are N mappings
A SPEC the kernel refuses (mbind EINVAL) prints {"error": ...} for that name instead."""
import ctypes
import json
import mmap
import sys

libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
libc.madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
libc.syscall.restype = ctypes.c_long

PAGE = mmap.PAGESIZE
MAP_PRIVATE, MAP_ANONYMOUS, MAP_HUGETLB = 0x02, 0x20, 0x40000
PROT_RW, PROT_R = 3, 1
MADV_HUGEPAGE = 14
SYS_MBIND = 237
MAP_FAILED = ctypes.c_void_p(-1).value


def anon(size, flags=0, prot=PROT_RW):
    addr = libc.mmap(None, size, prot, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0)
    if addr in (None, MAP_FAILED):
        raise OSError(ctypes.get_errno(), "mmap of %d bytes" % size)
    return addr


def touch(addr, size, step=PAGE):
    for off in range(0, size, step):
        ctypes.memset(addr + off, 1, 1)


def main(specs):
    out = {}
    for spec in specs:
        kind, _, arg = spec.partition(":")
        if kind == "thp":
            size = int(arg) << 20
            raw = anon(size + (2 << 20))
            addr = (raw + (2 << 20) - 1) & ~((2 << 20) - 1)
            if libc.madvise(addr, size, MADV_HUGEPAGE) != 0:
                raise OSError(ctypes.get_errno(), "madvise")
            touch(addr, size)
            out["thp"] = "%x" % addr
        elif kind == "hugetlb":
            n = int(arg)
            addr = anon(n * (2 << 20), MAP_HUGETLB)
            touch(addr, n * (2 << 20), 2 << 20)
            out["hugetlb"] = "%x" % addr
        elif kind == "policy":
            name, mode, flags, nodes = arg.split(":")
            size = 64 << 10
            addr = anon(size)
            ids = [int(n) for n in nodes.split(",") if n]
            mask = ctypes.c_ulong(sum(1 << n for n in ids))
            rc = libc.syscall(SYS_MBIND, ctypes.c_void_p(addr), ctypes.c_ulong(size),
                              ctypes.c_ulong(int(mode) | int(flags)), ctypes.byref(mask) if ids else None,
                              ctypes.c_ulong(65 if ids else 0), ctypes.c_uint(0))
            if rc != 0:
                out[name] = {"error": ctypes.get_errno()}
                continue
            touch(addr, size)
            out[name] = "%x" % addr
        elif kind == "anon":
            size = int(arg) << 10
            addr = anon(size)
            touch(addr, size)
            out[kind] = "%x" % addr
        elif kind == "untouched":
            # read-only, so it never merges with a touched neighbour
            out[kind] = "%x" % anon(int(arg) << 10, prot=PROT_R)
        elif kind == "maps":
            n = int(arg)
            addr = anon(n * PAGE)
            for i in range(1, n, 2):
                if libc.mprotect(addr + i * PAGE, PAGE, PROT_R) != 0:
                    raise OSError(ctypes.get_errno(), "mprotect page %d" % i)
            touch(addr, n * PAGE, 2 * PAGE)
            out["maps"] = "%x" % addr
        else:
            raise SystemExit("unknown spec " + spec)
    print(json.dumps(out), flush=True)
    sys.stdin.read()


if __name__ == "__main__":
    main(sys.argv[1:])
