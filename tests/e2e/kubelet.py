"""The kubelet's atomic writer (kubernetes pkg/volume/util/atomic_writer.go, AtomicWriter.Write) as
a test harness, the same system calls in the same order as tests/unit/kubelet.h (whose comment
lists them):

  1. mkdir "..YYYY_MM_DD_HH_MM_SS.NNNNNNNNN", chmod 0755      5. symlink "..data_tmp" -> it
  2. each file written into it, chmod                          6. rename "..data_tmp" over "..data"
  3. user-visible links NAME -> ..data/NAME (LINKS_BEFORE)     7. the links (LINKS_AFTER)
  4. readlink "..data" (the old swap)                          8. names no longer in the payload removed
                                                               9. the old directory removed
step(n, what) is called after each call when given."""
import os
import shutil
import time

LINKS_BEFORE = "links-before-swap"   # kubernetes commit 19e8ce7's order (kubernetes #93686)
LINKS_AFTER = "links-after-swap"     # the later order: the links made after the rename
_seq = [0]


def write(target, files, order=LINKS_AFTER, step=None):
    """One Write of files ({name: text}) into the directory target; returns the new ..TIMESTAMP."""
    step = step or (lambda n, what: None)
    _seq[0] += 1
    ts = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime()) + "%09d" % (100000000 + os.getpid() * 1000 + _seq[0])
    tsdir = os.path.join(target, ts)
    os.mkdir(tsdir, 0o700)
    os.chmod(tsdir, 0o755)
    step(1, "mkdir " + ts)
    for name, text in files.items():
        p = os.path.join(tsdir, name)
        with open(p, "w") as f:
            f.write(text)
        os.chmod(p, 0o644)
        step(2, "write " + name)

    def links(n):
        for name in files:
            p = os.path.join(target, name)
            if not os.path.lexists(p):
                os.symlink(os.path.join("..data", name), p)
                step(n, "symlink " + name)

    if order == LINKS_BEFORE:
        links(3)
    data = os.path.join(target, "..data")
    old = os.readlink(data) if os.path.lexists(data) else None
    tmp = os.path.join(target, "..data_tmp")
    os.symlink(ts, tmp)
    step(5, "symlink ..data_tmp -> " + ts)
    os.rename(tmp, data)
    step(6, "rename ..data_tmp over ..data")
    if order == LINKS_AFTER:
        links(7)
    for name in sorted(os.listdir(target)):
        if not name.startswith("..") and name not in files:
            os.unlink(os.path.join(target, name))
            step(8, "remove " + name)
    if old:
        shutil.rmtree(os.path.join(target, old))
        step(9, "remove " + old)
    return ts
