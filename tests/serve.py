#!/usr/bin/python3
"""serve.py - tsrun.serve: a torchvision DataLoader published to real
trainers (real processes, real JPEGs from `tsrun make-dataset`).

  share       a DataLoader (ImageFolder, 2 workers, seeded shuffle) served
              for 2 epochs to three tsrun.Loader trainers at batch 32, 100
              and 256: each one's whole-stream digest (epoch, label, bytes of
              every sample) equals the DataLoader's own, read directly; no
              batch spans an epoch; each epoch ends with its short batch;
              the producer's summary names the three.
  killed      a trainer killed with SIGKILL mid-stream: the other one reads
              every epoch to the end, the producer finishes (exit 0), and
              `tsrun stat` answered while it ran.
  producer    the producer killed with SIGKILL: the waiting trainer gets
              ProducerGone within a second.
  forked      a child the producer forked after its socket was made (as a
              DataLoader forks workers) outlives it: a trainer that comes
              after the SIGKILL is refused at once.
  shape       a batch of another shape: serve() raises ValueError naming the
              batch and both shapes, and the trainer gets ProducerGone after
              the good batches.
  tensors     the object form (tsrun.Producer): float16 samples of rank 2
              and one-hot float32 label tensors arrive exact, and an epoch's
              short batch arrives when end_epoch() is called, before the
              next epoch is published.

Exit 77 (skip) without torch/torchvision or photos for the data set.
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.abspath(__file__)
TSRUN = os.environ.get("TSRUN", "tsrun")
# This build's libraries, for us and every process we start (the source
# tree may hold other builds, an ASan one say).
for var, lib in (("TSRUN_LIBTSCLIENT", "TS_LIBTSCLIENT"), ("TSRUN_LIBTSRUN", "TS_LIBTSRUN")):
    if os.environ.get(lib):
        os.environ[var] = os.environ[lib]
PY = sys.executable
failures = []


def check(cond, what, detail=""):
    print("%s: %s%s" % ("ok" if cond else "FAIL", what,
                        (" (%s)" % detail) if detail and not cond else ""))
    if not cond:
        failures.append(what)


def sample_digest(h, epoch, label, x):
    h.update(("%d %d|" % (epoch, label)).encode())
    h.update(x.contiguous().numpy().tobytes())


def make_loader(folder, workers=2):
    import torch
    import torchvision
    import torchvision.transforms as T
    ds = torchvision.datasets.ImageFolder(folder, transform=T.Compose(
        [T.Resize(40), T.CenterCrop(32), T.ToTensor()]))
    g = torch.Generator()
    g.manual_seed(7)
    return torch.utils.data.DataLoader(ds, batch_size=64, shuffle=True, generator=g,
                                       num_workers=workers)


# ---- the processes -----------------------------------------------------------

def producer_main(mode, sock, arg):
    import torch
    import tsrun
    if mode == "share":
        tsrun.serve(make_loader(arg), socket=sock, epochs=2, wait=3, name="imagefolder")
    elif mode == "three":
        tsrun.serve(make_loader(arg), socket=sock, epochs=3, wait=2, name="imagefolder")
    elif mode == "forever":
        tsrun.serve(make_loader(arg), socket=sock, epochs=0, name="imagefolder")
    elif mode == "shape":
        def batches():
            for i in range(5):
                side = 30 if i == 3 else 32
                yield torch.full((16, 3, side, side), float(i)), torch.arange(16)
        tsrun.serve(batches(), socket=sock, epochs=1)
    elif mode == "forked":
        p = tsrun.Producer(sock, epochs=0, wait=0)
        p.put(torch.zeros(16, 4), torch.arange(16))   # the socket is there now
        pid = os.fork()
        if pid == 0:
            time.sleep(30)       # a DataLoader worker, busy
            os._exit(0)
        print("child %d" % pid, flush=True)
        while True:
            p.put(torch.zeros(16, 4), torch.arange(16))
    elif mode == "tensors":
        torch.manual_seed(3)
        with tsrun.Producer(sock, epochs=2, ring=8, wait=1) as p:
            for epoch in range(2):
                if epoch == 1:
                    time.sleep(1.5)
                    print("epoch1 %.6f" % time.time(), flush=True)
                for i in range(5):
                    x = (torch.randn(20, 2, 50) * 100).half()
                    y = torch.nn.functional.one_hot(torch.randint(0, 10, (20,)), 10).float()
                    p.put(x, y)
                p.end_epoch()
    return 0


def batches(loader):
    """Every batch to the end of the stream: tsrun.Loader yields one epoch
    per pass, and a pass that yields nothing is the end."""
    while True:
        n = 0
        for xy in loader:
            n += 1
            yield xy
        if n == 0:
            return


def trainer_main(sock, batch, out, pause):
    import tsrun
    deadline = time.time() + 60
    while not os.path.exists(sock):
        if time.time() > deadline:
            raise SystemExit("no socket " + sock)
        time.sleep(0.05)
    h = hashlib.sha256()
    rec = {"batches": [], "digest": None, "end": None}
    with open(out, "w") as f:
        try:
            loader = tsrun.Loader(sock, batch_size=batch)
            rec["shape"] = list(loader.shape)
            for x, y in batches(loader):
                epoch = loader.epoch
                rec["batches"].append([epoch, loader.index, x.shape[0], time.time()])
                if y.dim() == 1:
                    for i in range(x.shape[0]):
                        sample_digest(h, epoch, int(y[i]), x[i])
                else:
                    rec.setdefault("labels", []).extend(y.argmax(1).tolist())
                    rec.setdefault("label_shape", list(y.shape[1:]))
                    rec.setdefault("sums", []).extend(
                        [float(x[i].float().sum()) for i in range(x.shape[0])])
                    rec["dtype"] = str(x.dtype)
                f.write("batch %d\n" % len(rec["batches"]))
                f.flush()
                if pause:
                    time.sleep(pause)
            rec["end"] = "eos"
        except tsrun.ProducerGone as e:
            rec["end"] = "gone: %s" % e
            rec["gone_at"] = time.time()
        rec["digest"] = h.hexdigest()
        f.write("RESULT " + json.dumps(rec) + "\n")
    return 0


# ---- the checks -----------------------------------------------------------------

def result(path):
    with open(path) as f:
        for line in f:
            if line.startswith("RESULT "):
                return json.loads(line[7:])
    return None


def start_producer(mode, sock, arg="", env=None):
    return subprocess.Popen([PY, HERE, "_producer", mode, sock, arg], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def start_trainer(sock, batch, out, pause=0.0):
    return subprocess.Popen([PY, HERE, "_trainer", sock, str(batch), out, str(pause)])


def wait_lines(path, n, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with open(path) as f:
                if sum(1 for line in f if line.startswith("batch")) >= n:
                    return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def reference(folder, epochs):
    import hashlib as hl
    h = hl.sha256()
    loader = make_loader(folder, workers=0)
    n = 0
    for epoch in range(epochs):
        for x, y in loader:
            for i in range(x.shape[0]):
                sample_digest(h, epoch, int(y[i]), x[i])
            n += x.shape[0]
    return h.hexdigest(), n // epochs


def test_share(tmp, folder):
    sock = os.path.join(tmp, "share.sock")
    prod = start_producer("share", sock, folder)
    outs = {b: os.path.join(tmp, "share-%d.out" % b) for b in (32, 100, 256)}
    trainers = [start_trainer(sock, b, outs[b]) for b in outs]
    for t in trainers:
        t.wait(timeout=240)
    # wait4 (not Popen's wait): the kernel's CPU figure of the producer
    # and the DataLoader workers it reaped, to hold its summary to
    err = prod.stderr.read()
    prod.stdout.read()
    _, status, ru = os.wait4(prod.pid, 0)
    prod.returncode = os.waitstatus_to_exitcode(status)
    check(prod.returncode == 0, "share: producer exit 0", err[-400:])
    m = re.search(r"summary: .* cpu ([0-9.]+) s \(([0-9.]+) s of it in child processes", err)
    os_cpu = ru.ru_utime + ru.ru_stime
    check(m is not None, "share: the summary counts the DataLoader workers' CPU", err[-600:])
    if m:
        total, workers = float(m.group(1)), float(m.group(2))
        # the workers decode every image (2 epochs of 300): without them
        # the figure is the producer's alone, about half the kernel's
        # (which also counts the interpreter's exit after the summary)
        check(0 < workers < total and 0.75 * os_cpu <= total <= os_cpu + 0.2,
              "share: summary cpu %.1f s (%.1f s workers) against the kernel's %.1f s"
              % (total, workers, os_cpu))
    want, per_epoch = reference(folder, 2)
    for b, path in outs.items():
        r = result(path)
        if r is None:
            check(False, "share: trainer batch %d wrote a result" % b)
            continue
        check(r["end"] == "eos", "share: trainer batch %d reached the end of stream" % b,
              r["end"])
        check(r["digest"] == want, "share: trainer batch %d read the DataLoader's stream" % b,
              "%s vs %s" % (r["digest"][:16], want[:16]))
        check(r["shape"] == [3, 32, 32], "share: trainer batch %d: shape" % b, r["shape"])
        sizes = {}
        for epoch, index, n, _ in r["batches"]:
            sizes.setdefault(epoch, []).append((index, n))
        for epoch in (0, 1):
            got = sizes.get(epoch, [])
            expect = [(i, min(b, per_epoch - i)) for i in range(0, per_epoch, b)]
            check(got == expect, "share: batch %d, epoch %d: whole batches then the short one"
                  % (b, epoch), "%s" % got[-2:])
    for b in outs:
        check("(batch %d)" % b in err, "share: the summary names the trainer of batch %d" % b)


def test_killed(tmp, folder):
    sock = os.path.join(tmp, "killed.sock")
    prod = start_producer("three", sock, folder)
    fast_out = os.path.join(tmp, "killed-fast.out")
    slow_out = os.path.join(tmp, "killed-slow.out")
    fast = start_trainer(sock, 64, fast_out)
    slow = start_trainer(sock, 32, slow_out, pause=0.2)
    check(wait_lines(slow_out, 2), "killed: the slow trainer started reading")
    st = subprocess.run([TSRUN, "stat", sock], capture_output=True, text=True, timeout=30)
    check(st.returncode == 0 and "imagefolder" in st.stdout,
          "killed: tsrun stat answers for a tsrun.serve producer",
          (st.stdout + st.stderr)[-300:])
    slow.send_signal(signal.SIGKILL)
    slow.wait()
    fast.wait(timeout=240)
    _, err = prod.communicate(timeout=120)
    check(prod.returncode == 0, "killed: producer finished (exit 0)", err[-400:])
    r = result(fast_out)
    n = sum(b[2] for b in r["batches"]) if r else 0
    per_epoch = sum(len(files) for _, _, files in os.walk(folder))
    check(r is not None and r["end"] == "eos" and n == 3 * per_epoch,
          "killed: the other trainer read all 3 epochs", "%d samples, %s" % (n, r and r["end"]))


def test_producer_killed(tmp, folder):
    sock = os.path.join(tmp, "prod.sock")
    prod = start_producer("forever", sock, folder)
    out = os.path.join(tmp, "prod.out")
    tr = start_trainer(sock, 64, out)
    check(wait_lines(out, 3), "producer: the trainer reads")
    t_kill = time.time()
    prod.send_signal(signal.SIGKILL)
    prod.wait()
    tr.wait(timeout=30)
    r = result(out)
    gone = r and r["end"] and r["end"].startswith("gone")
    check(gone, "producer: the trainer got ProducerGone", r and r["end"])
    if gone:
        dt = r["gone_at"] - t_kill
        check(dt < 1.0, "producer: reported within a second", "%.3f s" % dt)


def test_forked(tmp):
    """A child forked after the socket was made (as a DataLoader forks its
    workers each epoch) outlives the producer, which is SIGKILLed: a
    trainer that comes now is refused at once, not left waiting 5 s for a
    welcome from a socket only the child still holds."""
    import tsrun
    sock = os.path.join(tmp, "forked.sock")
    prod = start_producer("forked", sock)
    line = prod.stdout.readline().split()
    check(line[:1] == ["child"], "forked: the producer forked its child", line)
    if line[:1] != ["child"]:
        prod.kill()
        return
    child = int(line[1])
    prod.send_signal(signal.SIGKILL)
    prod.wait()
    t0 = time.time()
    try:
        tsrun.Loader(sock, batch_size=16).close()
        refused = None
    except tsrun.TsrunError as e:
        refused = str(e)
    dt = time.time() - t0
    try:
        os.kill(child, signal.SIGKILL)
    except ProcessLookupError:
        pass
    check(refused is not None and dt < 1.0, "forked: a trainer coming after the producer "
          "died is refused at once", "%.3f s: %s" % (dt, refused))


def test_shape(tmp):
    sock = os.path.join(tmp, "shape.sock")
    prod = start_producer("shape", sock)
    out = os.path.join(tmp, "shape.out")
    tr = start_trainer(sock, 16, out)
    tr.wait(timeout=60)
    _, err = prod.communicate(timeout=60)
    check(prod.returncode != 0, "shape: the producer fails (exit %d)" % prod.returncode)
    check("ValueError: tsrun.serve: batch 3 of epoch 0 has samples of (3, 30, 30) float32, "
          "but the first batch fixed (3, 32, 32) float32" in err,
          "shape: the error names the batch and both shapes", err.strip()[-300:])
    r = result(out)
    check(r is not None and r["end"].startswith("gone") and len(r["batches"]) == 3,
          "shape: the trainer read the 3 good batches, then ProducerGone",
          r and "%d batches, %s" % (len(r["batches"]), r["end"]))
    check(r is not None and "batch 3 of epoch 0 has samples of (3, 30, 30)" in r["end"],
          "shape: the trainer's error says why the producer failed", r and r["end"])


def test_tensors(tmp):
    import torch
    sock = os.path.join(tmp, "tensors.sock")
    prod = start_producer("tensors", sock)
    out = os.path.join(tmp, "tensors.out")
    tr = start_trainer(sock, 64, out)
    tr.wait(timeout=60)
    sout, err = prod.communicate(timeout=60)
    check(prod.returncode == 0, "tensors: producer exit 0", err[-300:])
    torch.manual_seed(3)
    labels, sums = [], []
    for epoch in range(2):
        for i in range(5):
            x = (torch.randn(20, 2, 50) * 100).half()
            y = torch.nn.functional.one_hot(torch.randint(0, 10, (20,)), 10).float()
            labels += y.argmax(1).tolist()
            sums += [float(x[j].float().sum()) for j in range(20)]
    r = result(out)
    if r is None:
        check(False, "tensors: the trainer wrote a result")
        return
    check(r["shape"] == [2, 50] and r["dtype"] == "torch.float16",
          "tensors: rank-2 float16 samples", "%s %s" % (r["shape"], r.get("dtype")))
    check(r.get("label_shape") == [10], "tensors: one-hot label tensors", r.get("label_shape"))
    check(r.get("labels") == labels and r.get("sums") == sums,
          "tensors: every sample and label as put")
    sizes = [(b[0], b[1], b[2]) for b in r["batches"]]
    check(sizes == [(0, 0, 64), (0, 64, 36), (1, 0, 64), (1, 64, 36)],
          "tensors: epochs of 100 in batches of 64 and 36", sizes)
    epoch1 = [float(line.split()[1]) for line in sout.splitlines() if line.startswith("epoch1")]
    if epoch1 and len(r["batches"]) > 1:
        t_short = r["batches"][1][3]
        check(t_short < epoch1[0], "tensors: the short batch came at end_epoch(), before the "
              "next epoch", "%.3f s early" % (epoch1[0] - t_short))


def main():
    try:
        import torch  # noqa: F401
        import torchvision  # noqa: F401
    except ImportError as e:
        print("skip: no torch/torchvision:", e)
        return 77
    tmp = tempfile.mkdtemp(prefix="ts-serve.")
    ds = os.path.join(tmp, "ds")
    r = subprocess.run([TSRUN, "make-dataset", ds, "--images", "300", "--quiet"],
                       capture_output=True, text=True, timeout=600)  # slow under ASan
    if r.returncode:
        if "mate-backgrounds" in r.stderr or "TSRUN_PHOTOS" in r.stderr:
            print("skip: no photos:", r.stderr.strip())
            return 77
        print("FAIL: make-dataset:", r.stderr.strip())
        return 1
    folder = os.path.join(ds, "train")
    which = sys.argv[1:] or ["share", "killed", "producer", "forked", "shape", "tensors"]
    for name in which:
        t0 = time.time()
        {"share": lambda: test_share(tmp, folder),
         "killed": lambda: test_killed(tmp, folder),
         "producer": lambda: test_producer_killed(tmp, folder),
         "forked": lambda: test_forked(tmp),
         "shape": lambda: test_shape(tmp),
         "tensors": lambda: test_tensors(tmp)}[name]()
        print("-- %s: %.1f s" % (name, time.time() - t0))
    if failures:
        print("%d failure(s): %s" % (len(failures), "; ".join(failures)))
        return 1
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_producer":
        sys.exit(producer_main(sys.argv[2], sys.argv[3], sys.argv[4]))
    if len(sys.argv) > 1 and sys.argv[1] == "_trainer":
        sys.exit(trainer_main(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5])))
    sys.exit(main())
