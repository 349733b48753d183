#!/usr/bin/python3
"""client-seals.py - the client refuses a ring descriptor without the
seals the protocol promises (tensorsocket(7), Access): a fake producer
(this user, so the SO_PEERCRED check passes) answers the hello with a
welcome whose ring and control page are memfds, unsealed, then sealed
against shrinking and growing. `tsrun consume` and tsrun.Loader refuse the
unsealed ring (and the unsealed control page) naming F_GET_SEALS; the
sealed pair gets past that check (what the fake's zero-filled ring fails
next is another error). A real tsrun's descriptors pass (the other tests).
"""
import fcntl
import os
import socket
import struct
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tsproto import proto_version  # noqa: E402

TSRUN = os.environ.get("TSRUN")
if not TSRUN:
    print("TSRUN not set: skip")
    sys.exit(77)
if not hasattr(fcntl, "F_ADD_SEALS") or not hasattr(os, "memfd_create"):
    print("no memfd seals in this Python: skip")
    sys.exit(77)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)
    return cond


def memfd(size, sealed):
    fd = os.memfd_create("fake", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, size)
    if sealed:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
    return fd


def fake_producer(path, ring_sealed, ctl_sealed, n):
    """Answer n hellos with a welcome carrying the two memfds."""
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)

    def serve():
        for _ in range(n):
            c, _ = srv.accept()
            c.recv(4096)  # the hello
            body = struct.pack("<IIIIIIIIQQQQIIQ", proto_version(), os.getpid(), 4, 4, 1, 0, 0, 1,
                               16, 64, 100, 0, 0, 8, 0)
            msg = struct.pack("<IHH", 0x4b535354, 2, len(body)) + body
            fds = [memfd(1 << 20, ring_sealed), memfd(4096, ctl_sealed)]
            c.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                               struct.pack("2i", *fds))])
            for fd in fds:
                os.close(fd)
            c.close()
        srv.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return t


LOADER = r'''
import sys, tsrun
try:
    tsrun.Loader(sys.argv[1], batch_size=8, timeout=10).close()
    print("connected")
except tsrun.TsrunError as e:
    print("error:", e)
'''


def main():
    with tempfile.TemporaryDirectory(prefix="tsrun-seals.") as tmp:
        for name, ring_sealed, ctl_sealed in (("ring", False, True),
                                              ("control page", True, False),
                                              ("sealed", True, True)):
            path = os.path.join(tmp, name.replace(" ", "-") + ".sock")
            t = fake_producer(path, ring_sealed, ctl_sealed, 2)
            c = subprocess.run([TSRUN, "consume", path, "--max-batches", "1"],
                               capture_output=True, text=True, timeout=60)
            py = subprocess.run(["/usr/bin/python3", "-c", LOADER, path],
                                capture_output=True, text=True, timeout=120)
            t.join(timeout=30)
            refusal = ("refusing the producer's %s descriptor: it is not sealed against "
                       "shrinking and growing (F_GET_SEALS " % name)
            if name == "sealed":
                check(c.returncode != 0 and "F_GET_SEALS" not in c.stderr,
                      "sealed: tsrun consume exit %d: %s" % (c.returncode, c.stderr.strip()))
                check("F_GET_SEALS" not in py.stdout + py.stderr,
                      "sealed: the Loader: %s" % (py.stdout + py.stderr).strip()[-400:])
            else:
                check(c.returncode != 0 and refusal in c.stderr,
                      "%s unsealed: tsrun consume exit %d: %s"
                      % (name, c.returncode, c.stderr.strip()))
                check(py.stdout.startswith("error:") and refusal in py.stdout,
                      "%s unsealed: the Loader: %s"
                      % (name, (py.stdout + py.stderr).strip()[-400:]))
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
