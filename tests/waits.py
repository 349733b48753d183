#!/usr/bin/python3
"""waits.py - who waits on whom, against real processes.

1. A fast trainer (tsrun.Loader, no work per batch) and a slow one
   (tsrun consume --delay-ms 30, batch 8) on one ring of 4 batches: once
   both have run 6 s, `tsrun stat --json` has the fast one waiting for
   batches most of its time (>= 0.6 in the window and since it joined),
   the slow one almost never (<= 0.15), the producer waiting for a free
   slot most of its time (>= 0.5) and working little, and says in words
   that the slow trainer holds the ring; Loader.stats() agrees with the
   status (it is the same measure, taken by the trainer itself);
   `tsrun stat --metrics` and the serve setting metrics = PATH parse with
   prometheus_client's text parser, one series per trainer labelled pid,
   batch and job, with the status file's figures; the summary at exit says
   the same per trainer and for the producer, names the slow trainer, and
   the metrics file is gone.
2. A trainer at about 1 s a batch: every status once it has read 2
   batches gives it a rate above 0 (over 4 batches, not the last second),
   near its real 8 images/s, and the run's rate (which it paces) too.
3. Counts are what each trainer was handed: a Loader that only called
   len() (which reads one batch ahead) is listed with 0 images, a
   join="now" Loader that yields N samples and closes with N.
4. No system call per batch: `tsrun consume` under strace -f -c makes no
   clock system call per batch (the vDSO reads the clock) and no more system
   calls with the accounting than without it (TSRUN_NO_WAIT_ACCOUNTING=1),
   give or take a handful, over 1250 batches; futex and poll, the waits
   themselves, vary with the race and are left out (skipped without
   strace).
"""
import shutil
import json
import os
import re
import subprocess
import sys
import tempfile
import time

TSRUN = os.environ.get("TSRUN")
LIB = os.environ.get("TS_LIBTSCLIENT")
if not TSRUN or not LIB:
    print("skip: TSRUN / TS_LIBTSCLIENT not set")
    sys.exit(77)
try:
    import torch  # noqa: F401
except ImportError:
    print("skip: no torch")
    sys.exit(77)
try:
    from prometheus_client.parser import text_string_to_metric_families
except ImportError:
    print("skip: no prometheus_client (python3-prometheus-client)")
    sys.exit(77)
os.environ["TSRUN_LIBTSCLIENT"] = LIB
sys.path.insert(0, os.path.join(os.environ.get("TS_SRCDIR", ".."), "src", "python"))
import tsrun  # noqa: E402

WRAP = os.environ.get("TS_EXE_WRAPPER", "").split()
failed = 0


def check(cond, what, detail=""):
    global failed
    if cond:
        print("ok  ", what)
    else:
        print("FAIL:", what, detail)
        failed += 1


def serve(d, name, count, batch, ring, wait, extra=""):
    sock = os.path.join(d, name + ".sock")
    ts = os.path.join(d, name + ".ts")
    with open(ts, "w") as f:
        f.write(f"pipeline p = synthetic(size = 8, count = {count}) | to(uint8, nhwc) "
                f"| batch({batch})\n"
                f'serve p {{ socket = "{sock}" epochs = 1 ring = {ring} batches threads = 1 '
                f"{extra} }}\n")
    err = open(os.path.join(d, name + ".err"), "w+")
    p = subprocess.Popen(WRAP + [TSRUN, "run", ts, "--wait", str(wait)], stderr=err)
    for _ in range(200):
        if os.path.exists(sock):
            break
        time.sleep(0.05)
    return p, sock, err


def log_of(err):
    err.seek(0)
    return err.read()


def stat_json(sock):
    r = subprocess.run(WRAP + [TSRUN, "stat", "--json", sock], capture_output=True, text=True)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout)


def families(text):
    """{name: {frozenset(labels): value}} of a Prometheus text."""
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out.setdefault(s.name, {})[frozenset(s.labels.items())] = s.value
    return out


def trainer_value(fams, name, pid):
    for labels, v in fams.get(name, {}).items():
        if dict(labels).get("pid") == str(pid):
            return v, dict(labels)
    return None, None


with tempfile.TemporaryDirectory(prefix="tsrun-waits.", dir="/tmp") as d:
    # ---- 1. a fast and a slow trainer on one ring ------------------------
    prom = os.path.join(d, "tsrun.prom")
    # 4000 samples at the slow trainer's 8 per 30 ms: 15 s or more
    p, sock, err = serve(d, "two", 4000, 16, 4, 2, f'metrics = "{prom}"')
    slow = subprocess.Popen(WRAP + [TSRUN, "consume", sock, "--batch", "8", "--delay-ms", "30"],
                            stdout=subprocess.PIPE, text=True)
    loader = tsrun.Loader(sock, batch_size=16)
    it = iter(loader)
    st = None
    deadline = time.monotonic() + 60
    n_fast = 0
    while time.monotonic() < deadline:
        try:
            images, _ = next(it)
        except StopIteration:
            break
        n_fast += images.shape[0]
        if n_fast % 320:
            continue
        o = stat_json(sock)
        if not o or len(o["consumers"]) != 2:
            continue
        # both trainers connected 6 s and the producer's window past its
        # start (--wait 2: it was idle until they came)
        if (all((c.get("connected_s") or 0) >= 6 for c in o["consumers"]) and
                o["time"] >= 11):
            st = o
            break
    check(st is not None, "a status with both trainers 6 s in", st)
    me = os.getpid()
    mine = loader.stats()
    metrics_text = subprocess.run(WRAP + [TSRUN, "stat", "--metrics", sock],
                                  capture_output=True, text=True)
    both = subprocess.run(WRAP + [TSRUN, "stat", "--json", "--metrics", sock],
                          capture_output=True, text=True)
    check(both.returncode == 2 and "--json and --metrics" in both.stderr and not both.stdout,
          f"--json with --metrics is a usage error: {both.returncode} {both.stderr!r}")
    try:
        with open(prom) as f:
            prom_text = f.read()
    except OSError as e:
        prom_text = ""
        check(False, f"the metrics file {prom} exists: {e}")
    # the rest of the stream, then the end
    for images, _ in it:
        n_fast += images.shape[0]
    loader.close()
    out_slow, _ = slow.communicate(timeout=90)
    check(p.wait(timeout=90) == 0, "tsrun run ended by itself")
    log = log_of(err)
    if st is not None:
        by = {c["pid"]: c for c in st["consumers"]}
        fast_c, slow_c = by.get(me), by.get(slow.pid)
        check(fast_c is not None and slow_c is not None, "both trainers listed", st)
        if fast_c and slow_c:
            check(fast_c["wait"] >= 0.6 and fast_c["wait_total"] >= 0.6,
                  f"the fast trainer waits most of its time: {fast_c['wait']} in the "
                  f"window, {fast_c['wait_total']} since it joined", fast_c)
            check(slow_c["wait"] <= 0.15 and slow_c["wait_total"] <= 0.15,
                  f"the slow trainer almost never waits: {slow_c['wait']}, "
                  f"{slow_c['wait_total']}", slow_c)
            check(fast_c["job"] is None and slow_c["batch"] == 8, "job and batch fields")
        check(st["producer_slot_wait"] >= 0.5 and st["producer_working"] <= 0.4,
              f"the producer waits for a free slot: {st['producer_slot_wait']} (working "
              f"{st['producer_working']}, idle {st['producer_idle']})", st)
        words = st["who_waits"]
        check(f"trainer {slow.pid} (batch 8) holds the ring" in words,
              f"the status says who holds the ring: '{words}'")
        check(mine["wait_fraction"] >= 0.6 and mine["window_wait_fraction"] >= 0.6 and
              mine["samples"] > 0 and 0 < mine["window_s"] <= 11,
              f"Loader.stats() has the fast trainer waiting: {mine}")
        # the metrics, by a real parser, with the status file's figures
        check(metrics_text.returncode == 0, "tsrun stat --metrics exits 0",
              metrics_text.stderr)
        for what, text in (("tsrun stat --metrics", metrics_text.stdout),
                           ("serve metrics = PATH", prom_text)):
            try:
                fams = families(text)
            except Exception as e:  # the parser's own error is the finding
                check(False, f"{what}: parses as Prometheus text: {e}", text)
                continue
            for kind in ("HELP", "TYPE"):
                check(f"# {kind} tsrun_trainer_wait_fraction " in text,
                      f"{what}: # {kind} of tsrun_trainer_wait_fraction")
            fw, labels = trainer_value(fams, "tsrun_trainer_wait_fraction", me)
            sw, slabels = trainer_value(fams, "tsrun_trainer_wait_fraction", slow.pid)
            check(fw is not None and fw >= 0.6 and sw is not None and sw <= 0.15,
                  f"{what}: one wait series per trainer, fast {fw}, slow {sw}")
            check(labels is not None and labels.get("batch") == "16" and
                  labels.get("job") == "" and slabels is not None and
                  slabels.get("batch") == "8",
                  f"{what}: labelled by pid, batch and job: {labels}, {slabels}")
            slot = [v for k, v in fams.get("tsrun_producer_time_fraction", {}).items()
                    if dict(k).get("state") == "slot_wait"]
            check(slot and slot[0] >= 0.5, f"{what}: the producer's slot wait {slot}")
            n = fams.get("tsrun_trainer_images_total", {})
            check(len(n) == 2, f"{what}: an images counter per trainer ({len(n)})")
        mt = families(metrics_text.stdout) if metrics_text.returncode == 0 else {}
        fw, _ = trainer_value(mt, "tsrun_trainer_wait_fraction_since_join", me)
        check(fw is not None, "the since-join wait is a series too")
    check(not os.path.exists(prom), "the metrics file is removed at the end")
    check("images: 4000" in out_slow, "the slow trainer read the stream")
    check(n_fast == 4000, f"the fast trainer read the stream ({n_fast})")
    m = re.search(rf"summary: consumer {me} \(batch 16\): (\d+) images, .*waited (\d+) % of", log)
    check(m is not None and m.group(1) == "4000" and int(m.group(2)) >= 60,
          "the summary: the fast trainer's 4000 images, waiting most of its time", log)
    m = re.search(rf"summary: consumer {slow.pid} \(batch 8\): (\d+) images, .*waited (\d+) %",
                  log)
    check(m is not None and m.group(1) == "4000" and int(m.group(2)) <= 15,
          "the summary: the slow trainer barely waits", log)
    m = re.search(r"summary: producer: working (\d+) %, waiting for a free slot (\d+) %, "
                  r"idle (\d+) %", log)
    check(m is not None and int(m.group(2)) >= 40, "the summary: the producer's split", log)
    check(f"summary: trainer {slow.pid} (batch 8) holds the ring" in log,
          "the summary says who held the ring", log)
    m = re.search(r"waited: ([0-9.]+) of", out_slow)
    check(m is not None and float(m.group(1)) <= 0.15,
          f"tsrun consume reports its own wait: {m.group(1) if m else None}")

    # ---- 2. a trainer at about 1 s a batch --------------------------------
    p, sock, err = serve(d, "slowrate", 200, 8, 4, 1)
    c = subprocess.Popen(WRAP + [TSRUN, "consume", sock, "--batch", "8", "--delay-ms", "1000",
                                 "--max-batches", "7"], stdout=subprocess.PIPE, text=True)
    rates, run_rates = [], []
    t_end = time.monotonic() + 30
    while c.poll() is None and time.monotonic() < t_end:
        o = stat_json(sock)
        for x in (o or {}).get("consumers", []):
            if x["pid"] == c.pid and x["position"] >= 16:
                rates.append(x["images_per_s"])
                run_rates.append(o["images_per_s"])
        time.sleep(0.3)
    c.communicate(timeout=30)
    subprocess.run(WRAP + [TSRUN, "consume", sock, "--batch", "8"], stdout=subprocess.DEVNULL,
                   timeout=60)
    p.wait(timeout=60)
    check(len(rates) >= 8, f"statuses of the slow trainer seen: {len(rates)}")
    check(rates and min(rates) > 0,
          f"a trainer at 1 s a batch never reads 0 img/s: {rates}")
    check(run_rates and min(run_rates) > 0,
          f"nor does the producer it paces: {run_rates}")
    check(rates and 3 <= sorted(rates)[len(rates) // 2] <= 12,
          f"its rate is near its 8 images/s: median {sorted(rates)[len(rates) // 2] if rates else None}")

    # ---- 3. counts: what each trainer was handed --------------------------
    p, sock, err = serve(d, "counts", 2000, 32, 8, 1)
    # 2000 samples at 32 per 20 ms: 1.3 s or more
    first = subprocess.Popen(WRAP + [TSRUN, "consume", sock, "--batch", "32", "--delay-ms", "20"],
                             stdout=subprocess.PIPE, text=True)
    time.sleep(0.3)
    only_len = tsrun.Loader(sock, batch_size=64, join="now")
    n_len = len(only_len)   # reads one batch ahead
    only_len.close()
    now = tsrun.Loader(sock, batch_size=16, join="now")
    yielded = 0
    for images, _ in now:
        yielded += images.shape[0]
    now_stats = now.stats()
    now.close()
    first.communicate(timeout=60)
    check(p.wait(timeout=60) == 0, "tsrun run ended by itself")
    log = log_of(err)
    check(n_len > 0, f"len() of the first loader: {n_len}")
    lines = re.findall(r"summary: consumer %d \(batch (\d+)\): (\d+) images" % os.getpid(), log)
    got = {int(b): int(n) for b, n in lines}
    check(got.get(64) == 0, f"the len()-only trainer is listed with 0 images: {got.get(64)}",
          log)
    check(0 < yielded < 2000 and got.get(16) == yielded,
          f"the join=\"now\" trainer is listed with the {yielded} samples it yielded: "
          f"{got.get(16)}", log)
    check(now_stats["samples"] == yielded,
          f"Loader.stats() counts what it yielded: {now_stats['samples']}")

    # ---- 4. no system call per batch --------------------------------------
    strace = shutil.which("strace")
    try:
        with open("/sys/devices/system/clocksource/clocksource0/current_clocksource") as f:
            clock = f.read().strip()
    except OSError:
        clock = "?"
    # clock sources the vDSO reads without entering the kernel
    vdso = clock in ("tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page")
    if not vdso:
        print(f"skip: clock source {clock}: clock_gettime is a system call here")
    elif not strace or WRAP:
        print("skip: no strace (or a wrapper runs the programs): system calls not counted")
    else:
        calls, clock_calls = {}, {}
        for side, env in (("with", {}), ("without", {"TSRUN_NO_WAIT_ACCOUNTING": "1"})):
            p, sock, err = serve(d, "sys-" + side, 20000, 16, 64, 1)
            out = os.path.join(d, side + ".strace")
            r = subprocess.run([strace, "-f", "-c", "-o", out, TSRUN, "consume", sock,
                                "--batch", "16"], env=dict(os.environ, **env),
                               capture_output=True, text=True, timeout=120)
            p.wait(timeout=60)
            # calls by name (% time, seconds, usecs/call, calls, [errors],
            # name); futex and poll, the waits themselves, vary with how
            # often the trainer outran the producer: left out
            total = None
            with open(out) as f:
                for line in f:
                    w = line.split()
                    if len(w) >= 5 and w[3].isdigit() and w[-1] == "total":
                        total = (total or 0) + int(w[3])
                    elif len(w) >= 5 and w[3].isdigit() and w[-1] in ("futex", "poll"):
                        total = (total or 0) - int(w[3])
                    elif len(w) >= 5 and w[3].isdigit() and w[-1].startswith("clock_"):
                        clock_calls[side] = clock_calls.get(side, 0) + int(w[3])
            check(r.returncode == 0 and "images: 20000" in r.stdout and total is not None,
                  f"strace'd consume ({side}) read the stream: {total} system calls",
                  r.stdout + r.stderr)
            calls[side] = total or 0
        # a sanitizer's runtime reads the clock a few times at start
        check(clock_calls.get("with", 0) < 50,
              f"the clock is read without a system call: {clock_calls} clock calls, "
              f"over 1250 batches x 2 reads")
        check(calls["with"] <= calls["without"] + 20,
              f"no system call per batch for the accounting: {calls['with']} with, "
              f"{calls['without']} without, over 1250 batches")

print("waits: all passed" if not failed else f"waits: {failed} failed")
sys.exit(1 if failed else 0)
