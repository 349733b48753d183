#!/usr/bin/env python3
"""What the kernel charges for the first touch of fresh anonymous memory.

    perf/first_touch.py BYTES

Maps BYTES of private anonymous memory the way the decoded cache does
(MADV_HUGEPAGE), writes one byte in every 4 KiB page, and prints the
system time that took, then that of a second pass over the same pages
(faulted in: the page tables only). The difference is the kernel's
fault and zeroing of fresh pages: the system time a cached run's first
epoch pays for its entries (runtime/engine/engine_cache.c), which no
user-space work can avoid. On a guest whose kernel hands free memory back
to its hypervisor (page_reporting on /proc/cmdline) the host backs each
page again when it is first touched, and the figure is many times a bare
host's. perf/cache.py runs it at the whole set's size once a round.

Prints (tsrun bench's "key: value" form):
    bytes: N
    first_touch_sys_s: S      first_touch_wall_s: W
    second_touch_sys_s: S2
"""
import mmap
import resource
import sys
import time

PAGE = 4096


def sys_time():
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime


def touch(view, n, value):
    """Write value at the start of every page; (sys seconds, wall seconds)."""
    s0, t0 = sys_time(), time.monotonic()
    for off in range(0, n, PAGE):
        view[off] = value
    return sys_time() - s0, time.monotonic() - t0


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: first_touch.py BYTES")
    try:
        n = int(sys.argv[1])
    except ValueError:
        sys.exit(f"first_touch.py: {sys.argv[1]!r} is not a byte count")
    if n < PAGE:
        sys.exit(f"first_touch.py: {n} bytes is under one page ({PAGE})")
    m = mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    if hasattr(m, "madvise") and hasattr(mmap, "MADV_HUGEPAGE"):
        m.madvise(mmap.MADV_HUGEPAGE)
    view = memoryview(m)
    first_sys, first_wall = touch(view, n, 1)
    second_sys, _ = touch(view, n, 2)
    view.release()
    m.close()
    print(f"bytes: {n}")
    print(f"first_touch_sys_s: {first_sys:.4f}")
    print(f"first_touch_wall_s: {first_wall:.4f}")
    print(f"second_touch_sys_s: {second_sys:.4f}")


if __name__ == "__main__":
    main()
