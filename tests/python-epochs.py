#!/usr/bin/python3
"""python-epochs.py - tsrun.Loader keeps DataLoader's iteration contract,
against a real `tsrun run` (synthetic images, 100 per epoch):

- `for epoch in range(3): for x, y in loader` yields three epochs with
  len(loader) batches each, for a trainer there from the start (with and
  without drop_last) and for one that joined mid-epoch (its first pass is
  the rest of that epoch, and len() says so);
- state_dict()/load_state_dict(): a producer restarted with --start at
  the saved position resumes exactly, whatever the join; one started past
  it serves the samples owed from the next epoch (the same count, other
  samples), with a warning naming it, then the epochs still owed;
- timeout raises tsrun.Timeout on time;
- Ctrl-C (SIGINT) ends a trainer waiting for a batch with
  KeyboardInterrupt within a second, SIGTERM ends it too, and neither
  leaves the ring held: a later trainer gets the whole stream."""
import os
import signal
import sys
import tempfile
import threading
import time
import warnings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pytrainer  # noqa: E402

pytrainer.need_torch()
import tsrun  # noqa: E402

check = pytrainer.Checks()
SPE = 100


def passes(loader, n):
    """n passes: [(len before, batches yielded, epoch, first index)]."""
    out = []
    for _ in range(n):
        want = len(loader)
        got, first = 0, None
        for images, labels in loader:
            if first is None:
                first = loader.index
            got += 1
            check(images.shape[0] == labels.shape[0], "images and labels differ in n")
        out.append((want, got, loader.epoch, first))
    return out


def from_start(tmp):
    for drop_last, per in ((False, 7), (True, 6)):
        path, sock = pytrainer.pipeline(tmp, "start", f"synthetic(4, count = {SPE})", 3)
        prod = pytrainer.run(path, "--wait", "1")
        loader = tsrun.Loader(sock, batch_size=16, drop_last=drop_last, timeout=30)
        got = passes(loader, 3)
        check(got == [(per, per, 0, 0), (per, per, 1, 0), (per, per, 2, 0)],
              f"from the start, drop_last={drop_last}: {got}")
        check(len(loader) == 0 and list(loader) == [],
              f"after the stream: len {len(loader)}")
        loader.close()
        pytrainer.stop(prod)
    print("three epochs of len() batches from the start")


def mid_epoch(tmp):
    path, sock = pytrainer.pipeline(tmp, "mid", f"synthetic(4, count = {SPE})", 5)
    prod = pytrainer.run(path, "--wait", "1")
    first = tsrun.Loader(sock, batch_size=10, timeout=30)
    it = iter(first)
    for _ in range(3):
        next(it)
    errors = []

    def drain():
        try:
            for _ in range(5):
                for _ in first:
                    time.sleep(0.005)
        except Exception as e:  # reported below
            errors.append(e)

    late = tsrun.Loader(sock, batch_size=16, join="now", timeout=30)
    t = threading.Thread(target=drain)
    t.start()
    got = passes(late, 3)
    late.close()  # the first trainer reads on without waiting for it
    t.join(60)
    check(not errors, f"the first trainer failed: {errors}")
    (n0, c0, e0, i0), rest = got[0], got[1:]
    check(i0 is not None and 0 < i0 < SPE and i0 % 16 == 0,
          f"mid-epoch join started at index {i0}")
    check(n0 == c0 == -(-(SPE - i0) // 16), f"first pass after a mid-epoch join: {got[0]}")
    check(rest == [(7, 7, e0 + 1, 0), (7, 7, e0 + 2, 0)], f"later passes: {rest}")
    first.close()
    pytrainer.stop(prod)
    print(f"joined mid-epoch at {e0}:{i0}: passes {got}")


def resume(tmp):
    path, sock = pytrainer.pipeline(tmp, "res", f"synthetic(4, count = {SPE})", 3)
    prod = pytrainer.run(path, "--wait", "1")
    loader = tsrun.Loader(sock, batch_size=16, join="now", timeout=30)
    passes(loader, 1)
    it = iter(loader)
    next(it)
    next(it)
    state = loader.state_dict()
    check(state["epoch"] == 1 and state["index"] == 32, f"state_dict {state}")
    loader.close()
    pytrainer.stop(prod)
    # Restarted exactly there: nothing lost, nothing repeated.
    prod = pytrainer.run(path, "--wait", "1", "--start", "1:32")
    loader = tsrun.Loader(sock, batch_size=16, join="now", timeout=30)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        loader.load_state_dict(state)
        got = passes(loader, 2)
    check(not w, f"warnings on an exact resume: {[str(x.message) for x in w]}")
    check(got == [(5, 5, 1, 32), (7, 7, 2, 0)], f"exact resume: {got}")
    loader.close()
    pytrainer.stop(prod)
    # Restarted later in that epoch (the saved sample is never served):
    # index 32 of the next epoch, the 68 samples owed, with a word naming
    # it, then the epoch still owed (state epochs_left 2; grown: the
    # stream's last is 2).
    check(state.get("epochs_left") == 2, f"state_dict epochs_left {state}")
    prod = pytrainer.run(path, "--wait", "1", "--start", "1:64")
    loader = tsrun.Loader(sock, batch_size=16, join="now", timeout=30)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        loader.load_state_dict(state)
        got = passes(loader, 3)
    check(any("epoch 2" in str(x.message) for x in w),
          f"no warning when the producer moved on: {[str(x.message) for x in w]}")
    check(got == [(5, 5, 2, 32), (7, 7, 3, 0), (0, 0, 3, None)],
          f"resume after the producer moved on: {got}")
    loader.close()
    pytrainer.stop(prod)
    # Restarted exactly there, read with the default join (next_epoch):
    # the resume places the loader, not the join, so it is exact too, and
    # nothing warns; in the stream's last epoch the epoch still owed is
    # served past it.
    for at, want in ((state, [(5, 5, 1, 32), (7, 7, 2, 0)]),
                     (dict(state, epoch=2), [(5, 5, 2, 32), (7, 7, 3, 0)])):
        prod = pytrainer.run(path, "--wait", "1", "--start", f"{at['epoch']}:{at['index']}")
        loader = tsrun.Loader(sock, batch_size=16, timeout=30)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            loader.load_state_dict(at)
            got = passes(loader, 2)
        check(got == want, f"resume at {at} with join next_epoch: {got}")
        check(not w, f"resume at {at} with join next_epoch: warnings "
                     f"{[str(x.message) for x in w]}")
        loader.close()
        pytrainer.stop(prod)
    print("state_dict resumes exactly, or the samples owed of the next epoch with a warning")


def timeout(tmp):
    path, sock = pytrainer.pipeline(tmp, "to", f"synthetic(4, count = {SPE})", 1)
    prod = pytrainer.run(path, "--wait", "2")  # never starts: one trainer only
    loader = tsrun.Loader(sock, batch_size=16, timeout=0.3)
    t0 = time.monotonic()
    try:
        next(iter(loader))
        check(False, "a batch from a producer that waits for two trainers")
    except tsrun.Timeout as e:
        dt = time.monotonic() - t0
        check(0.25 <= dt < 2.0 and isinstance(e, TimeoutError) and "0.3" in str(e),
              f"timeout after {dt:.2f} s: {e}")
    loader.close()
    pytrainer.stop(prod)
    print("timeout raises tsrun.Timeout")


WAITER = r"""
import sys, time, tsrun
loader = tsrun.Loader(sys.argv[1], batch_size=16)
print("waiting", flush=True)
try:
    for x, y in loader:
        print("batch", flush=True)
except KeyboardInterrupt:
    print("interrupted %.3f" % time.monotonic(), flush=True)
    sys.exit(130)
"""


def interrupt(tmp):
    path, sock = pytrainer.pipeline(tmp, "int", f"synthetic(4, count = {SPE})", 2)
    prod = pytrainer.run(path, "--wait", "2")
    for sig in (signal.SIGINT, signal.SIGTERM):
        p = pytrainer.trainer(WAITER, sock)
        line = p.stdout.readline()
        check(line == "waiting\n", f"trainer: {line!r} {p.stderr.read() if not line else ''}")
        time.sleep(0.5)  # well inside the wait
        t0 = time.monotonic()
        p.send_signal(sig)
        try:
            out, err = p.communicate(timeout=10)
        except Exception:
            p.kill()
            out, err = p.communicate()
        dt = time.monotonic() - t0
        if sig == signal.SIGINT:
            # When KeyboardInterrupt was raised (CLOCK_MONOTONIC is the same
            # clock in both processes); the exit adds torch's teardown.
            raised = [float(w.split()[1]) - t0 for w in out.split("\n")
                      if w.startswith("interrupted ")]
            check(p.returncode == 130 and raised and raised[0] < 1.0,
                  f"SIGINT: rc {p.returncode}, raised after {raised} s, exit after "
                  f"{dt:.3f} s: {out} {err[-800:]}")
            if raised:
                print(f"SIGINT: KeyboardInterrupt {raised[0] * 1000:.0f} ms after the signal")
        else:
            check(p.returncode == -signal.SIGTERM and dt < 1.0,
                  f"SIGTERM: rc {p.returncode} after {dt:.3f} s: {err[-800:]}")
        print(f"{signal.Signals(sig).name}: the waiting trainer ended in {dt:.3f} s")
    # Two trainers have come and gone; two more (the producer waits for
    # two) read the whole stream, so neither left the ring held.
    loaders = [tsrun.Loader(sock, batch_size=16, timeout=30) for _ in range(2)]
    got = [None, None]

    def read(k):
        try:
            got[k] = passes(loaders[k], 2)
        except Exception as e:  # reported below
            got[k] = e
    threads = [threading.Thread(target=read, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for k in range(2):
        check(isinstance(got[k], list) and [g[:2] for g in got[k]] == [(7, 7), (7, 7)],
              f"after the signals, trainer {k}: {got[k]}")
        loaders[k].close()
    try:
        check(prod.wait(timeout=30) == 0, f"tsrun run: rc {prod.returncode}")
    except Exception as e:
        check(False, f"tsrun run did not end after the stream: {e}")
    pytrainer.stop(prod)


def main():
    with tempfile.TemporaryDirectory(prefix="ts-pyep-", ignore_cleanup_errors=True) as tmp:
        from_start(tmp)
        mid_epoch(tmp)
        resume(tmp)
        timeout(tmp)
        interrupt(tmp)
    return check.exit()


if __name__ == "__main__":
    sys.exit(main())
