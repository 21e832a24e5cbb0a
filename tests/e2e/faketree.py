"""A generated sysfs/procfs tree for what the test machine lacks: many nodes, CPU-less nodes,
read-only knobs, writes the kernel refuses. Files hold what the kernel would print; the daemon is
pointed at it with --sysfs-root ROOT/sys --procfs-root ROOT/proc.

Fault injection uses real kernel files, not fakes of errors:
  * read_only(rel)  -> symlink to a real 0444 sysfs file: open(O_WRONLY) fails with EACCES even for root;
  * einval(rel)     -> symlink to /proc/PID/oom_score_adj: it reads as a number and the kernel answers
                       EINVAL to any write outside -1000..1000 (so 4096 fails, 100 succeeds).
PID is the tree's stand-in, a sleeping process of the test's own: not /proc/self, because with
privilege separation the helper (root) writes and the daemon (unprivileged) reads, two processes
that must see one value.
"""
import atexit
import ctypes
import os
import signal
import subprocess

_STAND_INS = []   # every stand-in started, killed when the test process exits


def _die_with_parent():
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)   # PR_SET_PDEATHSIG


@atexit.register
def _end_stand_ins():
    for p in _STAND_INS:
        p.kill()
        p.wait()

THP_SIZES_KB = [16, 32, 64, 128, 256, 512, 1024, 2048]


class FakeTree:
    def __init__(self, root, nodes=4, cpus_per_node=2, cpuless=(3,), mem_mb=(4096, 4096, 2048, 1024),
                 hugetlb_kb=(2048, 1048576), mthp=True, release="6.12.0-fake", weighted_interleave=True):
        self.root = root
        self.sys = os.path.join(root, "sys")
        self.proc = os.path.join(root, "proc")
        self.nodes = nodes
        self.cpuless = set(cpuless)
        self.hugetlb_kb = list(hugetlb_kb)
        cpu = 0
        self.cpus = {}
        for n in range(nodes):
            if n in self.cpuless:
                self.cpus[n] = []
            else:
                self.cpus[n] = list(range(cpu, cpu + cpus_per_node))
                cpu += cpus_per_node
        self.mem_mb = {n: mem_mb[n % len(mem_mb)] for n in range(nodes)}
        self._stand_in = None
        self._build(release, mthp, weighted_interleave)

    # -- helpers -----------------------------------------------------------------------------------
    def path(self, rel):
        """rel is 'sys/...' or 'proc/...'."""
        return os.path.join(self.root, rel)

    def write(self, rel, text):
        p = self.path(rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        if os.path.islink(p):
            os.unlink(p)
        with open(p, "w") as f:
            f.write(text if text.endswith("\n") else text + "\n")

    def read(self, rel):
        with open(self.path(rel)) as f:
            return f.read().rstrip("\n")

    def read_only(self, rel, target="/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"):
        p = self.path(rel)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(target, p)

    def stand_in_proc(self, name):
        """/proc/PID/name of this tree's stand-in process, started on first use. It inherits the
        test's oom_adj (0) and keeps what is written to it until the test process exits: a daemon
        restarted on the tree reads what the previous one left, as it would read a real pool."""
        if self._stand_in is None:
            self._stand_in = subprocess.Popen(["sleep", "infinity"], preexec_fn=_die_with_parent)
            _STAND_INS.append(self._stand_in)
        return "/proc/%d/%s" % (self._stand_in.pid, name)

    def einval(self, rel):
        p = self.path(rel)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(self.stand_in_proc("oom_score_adj"), p)

    def partial(self, rel):
        """A hugetlb count file that accepts a write and gives fewer, like the kernel when it runs out
        of contiguous memory: a symlink to the stand-in's /proc/PID/oom_adj. The kernel turns an
        oom_adj write into oom_score_adj (N*1000/17) and back (*15/1000) with integer division, so
        writing N (1..14) reads back N-1, deterministically; 15 reads back 15 and above 15 is EINVAL.
        It shares its value with einval()'s file (oom_score_adj): do not use both in one tree."""
        p = self.path(rel)
        if os.path.lexists(p):
            os.unlink(p)
        os.symlink(self.stand_in_proc("oom_adj"), p)

    def snapshot(self):
        """Every regular file's content, to assert that a refused request changed nothing."""
        out = {}
        for base, _, files in os.walk(self.root):
            for name in files:
                p = os.path.join(base, name)
                if os.path.islink(p):
                    continue
                with open(p) as f:
                    out[os.path.relpath(p, self.root)] = f.read()
        return out

    @staticmethod
    def ranges(ids):
        out, ids = [], sorted(ids)
        i = 0
        while i < len(ids):
            j = i
            while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
                j += 1
            out.append(str(ids[i]) if i == j else "%d-%d" % (ids[i], ids[j]))
            i = j + 1
        return ",".join(out)

    # -- the tree ----------------------------------------------------------------------------------
    def _build(self, release, mthp, wi):
        n_all = list(range(self.nodes))
        w = self.write
        w("proc/sys/kernel/osrelease", release)
        w("proc/sys/kernel/numa_balancing", "0")
        w("proc/sys/vm/compaction_proactiveness", "20")
        w("proc/sys/vm/zone_reclaim_mode", "0")
        w("proc/sys/vm/min_free_kbytes", "67584")
        w("proc/sys/vm/watermark_scale_factor", "10")
        w("proc/sys/vm/nr_overcommit_hugepages", "0")
        w("proc/sys/vm/nr_hugepages", "0")
        w("proc/vmstat", "nr_free_pages 1000\nthp_fault_alloc 0\nthp_fault_fallback 0\n"
          "htlb_buddy_alloc_success 0\nhtlb_buddy_alloc_fail 0\ncompact_stall 0\n")
        # free blocks per order (0..10): node 1 has none of order 9 or more (fragmented)
        w("proc/buddyinfo", "".join("Node %d, zone   Normal %s\n" % (n, " ".join(
            str(x) for x in ([300, 200, 100, 50, 20, 10, 5, 2, 1, 0, 0] if n == 1
                             else [100, 50, 20, 10, 5, 4, 3, 2, 2, 3, 40]))) for n in n_all))
        total_kb = sum(self.mem_mb.values()) * 1024
        w("proc/meminfo", "MemTotal:       %d kB\nMemFree:        %d kB\nHugepagesize:       2048 kB\n"
          % (total_kb, total_kb // 2))

        node = "sys/devices/system/node"
        w(node + "/possible", self.ranges(n_all))
        w(node + "/online", self.ranges(n_all))
        w(node + "/has_memory", self.ranges(n_all))
        w(node + "/has_normal_memory", self.ranges(n_all))
        w(node + "/has_cpu", self.ranges([n for n in n_all if self.cpus[n]]))
        for n in n_all:
            d = "%s/node%d" % (node, n)
            w(d + "/cpulist", self.ranges(self.cpus[n]))
            w(d + "/distance", " ".join("10" if m == n else "20" if abs(m - n) == 1 else "30" for m in n_all))
            mt = self.mem_mb[n] * 1024
            w(d + "/meminfo", "Node %d MemTotal:       %d kB\nNode %d MemFree:        %d kB\n"
              "Node %d MemUsed:        %d kB\nNode %d HugePages_Total:     0\nNode %d HugePages_Free:      0\n"
              "Node %d HugePages_Surp:      0\n" % (n, mt, n, mt * 3 // 4, n, mt // 4, n, n, n))
            for kb in self.hugetlb_kb:
                h = "%s/hugepages/hugepages-%dkB" % (d, kb)
                for f in ("nr_hugepages", "free_hugepages", "surplus_hugepages"):
                    w(h + "/" + f, "0")
        for kb in self.hugetlb_kb:
            h = "sys/kernel/mm/hugepages/hugepages-%dkB" % kb
            for f in ("nr_hugepages", "nr_hugepages_mempolicy", "nr_overcommit_hugepages", "free_hugepages",
                      "resv_hugepages", "surplus_hugepages"):
                w(h + "/" + f, "0")

        thp = "sys/kernel/mm/transparent_hugepage"
        w(thp + "/enabled", "always [madvise] never")
        w(thp + "/defrag", "always defer defer+madvise [madvise] never")
        w(thp + "/shmem_enabled", "always within_size advise [never] deny force")
        w(thp + "/use_zero_page", "1")
        w(thp + "/hpage_pmd_size", "2097152")
        k = thp + "/khugepaged"
        for f, v in (("defrag", 1), ("pages_to_scan", 4096), ("scan_sleep_millisecs", 10000),
                     ("alloc_sleep_millisecs", 60000), ("max_ptes_none", 511), ("max_ptes_swap", 64),
                     ("max_ptes_shared", 256), ("pages_collapsed", 0), ("full_scans", 0)):
            w("%s/%s" % (k, f), str(v))
        if mthp:
            for kb in THP_SIZES_KB:
                s = "%s/hugepages-%dkB" % (thp, kb)
                w(s + "/enabled", "always [inherit] madvise never" if kb == 2048 else "always inherit madvise [never]")
                w(s + "/shmem_enabled", "always [inherit] within_size advise never" if kb == 2048
                  else "always inherit within_size advise [never]")
        if wi:
            for n in n_all:
                w("sys/kernel/mm/mempolicy/weighted_interleave/node%d" % n, "1")
