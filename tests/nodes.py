#!/usr/bin/python3
"""nodes.py - shard() across "nodes" simulated on one machine (real
processes): one `tsrun run` per node, told its node by GROUP_RANK and
GROUP_WORLD_SIZE (torchrun's names) or SLURM_NODEID and SLURM_NNODES, each
read by a trainer. Every sample's label is its item id (synthetic, classes
= count), so the test sees which items each node served.

Then two nodes of two ranks each (a 2-rank job on each node's tsrun):
the four processes together read each epoch exactly once.

Per epoch: every node serves the same number of items; together they
serve every item once, with the documented pad (drop_last = false: the
first ceil(N/K)*K - N items twice) or drop (drop_last = true: N mod K
items by none); each node's share changes between epochs. Also: `tsrun
graph` shows the node it resolved, half a pair of variables is an error
that names the missing one, and `shard | shuffle` is an error that says
what to write.
"""
import os
import subprocess
import sys
import tempfile
import time

TSRUN = os.environ.get("TSRUN")
if not TSRUN:
    print("TSRUN not set: skip")
    sys.exit(77)

failures = []
N = 101
EPOCHS = 3


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what)


def clean_env(extra):
    env = dict(os.environ)
    for k in ("GROUP_RANK", "GROUP_WORLD_SIZE", "SLURM_NODEID", "SLURM_NNODES",
              "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE"):
        env.pop(k, None)
    env.update(extra)
    return env


def image_list(tmp):
    """N real PNG files and a list naming them with label = item id: the
    io_uring reader's path (synthetic sources have no files)."""
    import zlib
    import struct
    d = os.path.join(tmp, "img")
    os.makedirs(d, exist_ok=True)
    lines = []
    for i in range(N):
        raw = b"".join(b"\0" + bytes([i % 256, 7, 200] * 4) for _ in range(4))
        def chunk(t, data):
            return (struct.pack(">I", len(data)) + t + data +
                    struct.pack(">I", zlib.crc32(t + data) & 0xffffffff))
        png = (b"\x89PNG\r\n\x1a\n" +
               chunk(b"IHDR", struct.pack(">IIBBBBB", 4, 4, 8, 2, 0, 0, 0)) +
               chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
        with open(os.path.join(d, "%03d.png" % i), "wb") as f:
            f.write(png)
        lines.append("img/%03d.png,%d" % (i, i))
    with open(os.path.join(tmp, "items.csv"), "w") as f:
        f.write("\n".join(lines) + "\n")


def pipeline(tmp, name, sock, drop, files=False):
    path = os.path.join(tmp, name + ".ts")
    src = ("list(\"items.csv\") | shuffle(seed = 5) | shard(drop_last = %s) | decode(rgb) | center_crop(4)"
           if files else
           "synthetic(size = 4, count = %d, classes = %d) | shuffle(seed = 5)"
           " | shard(drop_last = %%s)" % (N, N))
    with open(path, "w") as f:
        f.write("pipeline p = " + src % ("true" if drop else "false") +
                "\n    | batch(8)\n"
                "serve p { socket = \"%s\" epochs = %d ring = 4 batches }\n"
                % (sock, EPOCHS))
    return path


TRAINER = r"""
import json, sys, tsrun
job = {} if len(sys.argv) < 3 else {"job": "ddp", "rank": int(sys.argv[2]),
                                    "world_size": int(sys.argv[3])}
loader = tsrun.Loader(sys.argv[1], join="next_epoch", timeout=120, **job)
seen = {}
while True:  # one pass per epoch, to the end of the stream
    n = 0
    for images, labels in loader:
        seen.setdefault(loader.epoch, []).extend(int(x) for x in labels)
        n += 1
    if n == 0:
        break
print(json.dumps({"spe": loader.info.samples_per_epoch, "seen": seen}))
"""


def serve_node(tmp, name, drop, env, files):
    """One node: its tsrun and one trainer; what the trainer read."""
    import json
    sock = os.path.join(tmp, name + ".sock")
    ts = pipeline(tmp, name, sock, drop, files)
    prod = subprocess.Popen([TSRUN, "run", ts, "--wait", "1", "-q"],
                            stderr=subprocess.PIPE, text=True,
                            env=clean_env(env))
    for _ in range(200):
        if os.path.exists(sock) or prod.poll() is not None:
            break
        time.sleep(0.05)
    tr = subprocess.run([sys.executable, "-c", TRAINER, sock], capture_output=True,
                        text=True, timeout=120, env=clean_env({}))
    prod.wait(timeout=60)
    check(tr.returncode == 0, "%s: trainer failed: %s" % (name, tr.stderr[-500:]))
    check(prod.returncode == 0, "%s: tsrun exited %s: %s" % (name, prod.returncode,
                                                            prod.stderr.read()[-500:]))
    if tr.returncode:
        return None
    out = json.loads(tr.stdout)
    return out["spe"], {int(k): v for k, v in out["seen"].items()}


def two_nodes_two_ranks(tmp):
    """Two nodes of two ranks each (a 2-rank job on each node's tsrun): the
    four processes together read every item of each epoch once (N = 128:
    no pad at either level), each node's share changes between epochs."""
    import json
    n, k = 128, 2
    per_node = []
    for node in range(k):
        name = "r%d" % node
        sock = os.path.join(tmp, name + ".sock")
        path = os.path.join(tmp, name + ".ts")
        with open(path, "w") as f:
            f.write("pipeline p = synthetic(size = 4, count = %d, classes = %d)\n"
                    "    | shuffle(seed = 5) | shard | batch(8)\n"
                    "serve p { socket = \"%s\" epochs = %d ring = 4 batches }\n"
                    % (n, n, sock, EPOCHS))
        prod = subprocess.Popen([TSRUN, "run", path, "--wait", "2", "-q"],
                                stderr=subprocess.PIPE, text=True,
                                env=clean_env({"GROUP_RANK": str(node),
                                               "GROUP_WORLD_SIZE": str(k)}))
        for _ in range(200):
            if os.path.exists(sock) or prod.poll() is not None:
                break
            time.sleep(0.05)
        ranks = [subprocess.Popen([sys.executable, "-c", TRAINER, sock, str(r), "2"],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=clean_env({})) for r in range(2)]
        outs = [p.communicate(timeout=180) for p in ranks]
        prod.wait(timeout=60)
        check(prod.returncode == 0, "%s: tsrun exited %s" % (name, prod.returncode))
        for r, (p, (out, err)) in enumerate(zip(ranks, outs)):
            if not check(p.returncode == 0, "%s rank %d failed: %s" % (name, r, err[-500:])):
                return
        per_node.append([{int(e): v for e, v in json.loads(o)["seen"].items()}
                         for o, _ in outs])
    for e in range(EPOCHS):
        counts = {}
        for node in range(k):
            sizes = [len(per_node[node][r].get(e, [])) for r in range(2)]
            check(sizes == [n // 4, n // 4],
                  "node %d epoch %d: ranks read %s, want %d each" % (node, e, sizes, n // 4))
            for r in range(2):
                for x in per_node[node][r].get(e, []):
                    counts[x] = counts.get(x, 0) + 1
        check(sorted(counts) == list(range(n)) and set(counts.values()) == {1},
              "2 nodes x 2 ranks, epoch %d: %d items read, %d more than once, want %d once"
              % (e, len(counts), sum(c > 1 for c in counts.values()), n))
    for node in range(k):
        shares = [frozenset(per_node[node][0].get(e, []) + per_node[node][1].get(e, []))
                  for e in range(EPOCHS)]
        check(len(set(shares)) == EPOCHS, "node %d's share is the same in two epochs" % node)


def two_nodes(tmp, drop, names, files=False):
    k = 2
    got = []
    for node in range(k):
        env = {names[0]: str(node), names[1]: str(k)}
        r = serve_node(tmp, "n%d%s%s" % (node, "d" if drop else "p", "f" if files else ""),
                       drop, env, files)
        if r is None:
            return
        got.append(r)
    share = N // k if drop else -(-N // k)
    what = "%s, drop_last=%s%s" % (names[0], drop, ", files" if files else "")
    for node, (spe, seen) in enumerate(got):
        check(spe == share, "%s: node %d epoch size %d, want %d" % (what, node, spe, share))
        check(sorted(seen) == list(range(EPOCHS)),
              "%s: node %d epochs %s" % (what, node, sorted(seen)))
    for e in range(EPOCHS):
        counts = {}
        for node, (spe, seen) in enumerate(got):
            labels = seen.get(e, [])
            check(len(labels) == share,
                  "%s: node %d epoch %d read %d, want %d" % (what, node, e, len(labels), share))
            for x in labels:
                counts[x] = counts.get(x, 0) + 1
        never = [x for x in range(N) if x not in counts]
        twice = sum(c - 1 for c in counts.values())
        if drop:
            check(len(never) == N % k and twice == 0,
                  "%s: epoch %d: %d never read, %d read twice; want %d and 0"
                  % (what, e, len(never), twice, N % k))
        else:
            check(not never and twice == share * k - N,
                  "%s: epoch %d: %d never read, %d read twice; want 0 and %d"
                  % (what, e, len(never), twice, share * k - N))
    for node, (spe, seen) in enumerate(got):
        shares = [frozenset(seen.get(e, [])) for e in range(EPOCHS)]
        check(len(set(shares)) == EPOCHS,
              "%s: node %d's share is the same in two epochs" % (what, node))


def messages(tmp):
    sock = os.path.join(tmp, "m.sock")
    ts = pipeline(tmp, "m", sock, False)
    g = subprocess.run([TSRUN, "graph", ts], capture_output=True, text=True,
                       env=clean_env({"GROUP_RANK": "1", "GROUP_WORLD_SIZE": "4",
                                      "RANK": "7", "WORLD_SIZE": "8"}))
    check(g.returncode == 0 and
          "shard(index=1, count=4, drop_last=false) (from GROUP_RANK/GROUP_WORLD_SIZE)"
          in g.stdout, "graph: %s%s" % (g.stdout, g.stderr))
    g = subprocess.run([TSRUN, "graph", ts], capture_output=True, text=True,
                       env=clean_env({"SLURM_NODEID": "2"}))
    check(g.returncode != 0 and "SLURM_NODEID is set but SLURM_NNODES is not" in g.stderr,
          "graph, half a pair: %s" % g.stderr)
    r = subprocess.run([TSRUN, "run", ts, "-q"], capture_output=True, text=True,
                       env=clean_env({"GROUP_RANK": "3", "GROUP_WORLD_SIZE": "2"}),
                       timeout=30)
    check(r.returncode != 0 and "GROUP_RANK=3 and GROUP_WORLD_SIZE=2 do not name a node"
          in r.stderr, "run, bad node: %s" % r.stderr)
    bad = os.path.join(tmp, "order.ts")
    with open(bad, "w") as f:
        f.write("pipeline p = synthetic(size = 4) | shard | shuffle | batch(8)\n")
    c = subprocess.run([TSRUN, "check", bad], capture_output=True, text=True,
                       env=dict(os.environ, NO_COLOR="1"))
    check(c.returncode == 1 and "write shuffle(...) | shard(...)" in c.stderr,
          "shard | shuffle: %s" % c.stderr)


def main():
    with tempfile.TemporaryDirectory(prefix="tsrun-nodes.") as tmp:
        two_nodes(tmp, False, ("GROUP_RANK", "GROUP_WORLD_SIZE"))
        two_nodes(tmp, True, ("SLURM_NODEID", "SLURM_NNODES"))
        two_nodes_two_ranks(tmp)
        image_list(tmp)
        two_nodes(tmp, False, ("GROUP_RANK", "GROUP_WORLD_SIZE"), files=True)
        messages(tmp)
    if failures:
        print("%d failure(s)" % len(failures))
        return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
