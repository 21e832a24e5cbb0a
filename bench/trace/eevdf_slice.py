"""sched_setattr(2) for SCHED_OTHER with sched_runtime, which kernels >= 6.12 take as the EEVDF slice
request (clamped to 0.1-100 ms); x86_64 syscall numbers. usage: eevdf_slice.py TID NS"""
import ctypes, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
SYS_sched_setattr, SYS_sched_getattr = 314, 315
def setslice(tid, ns, nice=0):
    # struct sched_attr: size u32, policy u32, flags u64, nice s32, prio u32, runtime u64, deadline u64, period u64, util_min u32, util_max u32
    buf = struct.pack("IIQiIQQQII", 56, 0, 0, nice, 0, ns, 0, 0, 0, 0)
    b = ctypes.create_string_buffer(buf, 56)
    r = libc.syscall(SYS_sched_setattr, tid, b, 0)
    return 0 if r == 0 else -ctypes.get_errno()
def getslice(tid):
    b = ctypes.create_string_buffer(56)
    r = libc.syscall(SYS_sched_getattr, tid, b, 56, 0)
    return struct.unpack("IIQiIQQQII", b.raw)
if __name__ == "__main__":
    tid = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    print("set", setslice(tid, int(sys.argv[2]) if len(sys.argv) > 2 else 100000), getslice(tid))
