#!/usr/bin/python3
"""preview.py - `tsrun preview` pictures read back with an independent PNG
reader (Debian's PIL): picture size and cell count as tsrun(1) documents
the layout, the same file for any thread count, and the pixels of every
cell equal to the samples a real `tsrun run` trainer (tsrun.Loader, torch)
reads at that (epoch, index), after the same un-normalize (one inside
random_choice by the branch each sample drew, one after a tile by its
first alternative, as the caption says); 1-channel
uint16 samples and --stages too; bad arguments and a picture over the size
limit refused with a clear message. Exit 77 when PIL, numpy or torch is
missing."""
import os
import re
import subprocess
import sys
import tempfile
import time

try:
    import numpy as np
    from PIL import Image
    import torch
except Exception as e:  # noqa: BLE001
    print("skip: PIL/numpy/torch not importable:", e)
    sys.exit(77)

TSRUN = os.environ.get("TSRUN")
LIB = os.environ.get("TS_LIBTSCLIENT")
if not TSRUN or not LIB:
    print("skip: TSRUN / TS_LIBTSCLIENT not set")
    sys.exit(77)
os.environ["TSRUN_LIBTSCLIENT"] = LIB
sys.path.insert(0, os.path.join(os.environ.get("TS_SRCDIR", ".."), "src", "python"))
import tsrun  # noqa: E402

MARGIN, GAP, LINE, BAND_LINES, MIN_CELL = 6, 6, 10, 3, 96
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (" " + detail if detail else ""))
    if not ok:
        failures.append(name)


def preview(*args, expect=0):
    r = subprocess.run([TSRUN, "preview", *args], capture_output=True, text=True,
                       timeout=120)
    if r.returncode != expect:
        print(r.stdout, r.stderr)
    check("preview " + " ".join(args[:1] + args[2:]) + f" exits {expect}",
          r.returncode == expect, f"(got {r.returncode})")
    return r


def cells_of(out):
    """(x, y, w, h, epoch, index, label) of each 'cell ...' line."""
    cells = []
    for m in re.finditer(r"^cell \d+ at (\d+),(\d+) (\d+)x(\d+).*?: (\d+):(\d+) label (-?\d+)",
                         out, re.M):
        cells.append(tuple(int(g) for g in m.groups()))
    return cells


def unnorm(x):
    """A float32 CHW sample to the uint8 HWC levels tsrun preview shows."""
    v = x.astype(np.float32) * STD[:, None, None]
    v = v + MEAN[:, None, None]
    v = v * np.float32(255)
    v = np.where(v > 0, v, 0)
    return np.clip(np.rint(v), 0, 255).astype(np.uint8).transpose(1, 2, 0)


def trainer(ts_file, sock, batch, start=None):
    """Serve ts_file with `tsrun run` (from --start start, if given) and read
    every sample with tsrun.Loader: {(epoch, index): (tensor, label)}."""
    run = subprocess.Popen([TSRUN, "run", ts_file, "--socket", sock, "--wait", "1", "--quiet",
                            *(["--start", start] if start else [])],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            if os.path.exists(sock) or run.poll() is not None:
                break
            time.sleep(0.05)
        got = {}
        loader = tsrun.Loader(sock, batch_size=batch, join="next_epoch", timeout=60)
        # one pass of the loader is one epoch (DataLoader's contract): pass
        # after pass until one yields nothing, the end of the stream
        for _ in range(100):
            n = 0
            for images, labels in loader:
                e, i0 = loader.epoch, loader.index
                n += images.shape[0]
                for k in range(images.shape[0]):
                    got[(e, i0 + k)] = (images[k].clone().numpy(), int(labels[k]))
            if n == 0:
                break
        loader.close()
        run.wait(timeout=60)
        check("tsrun run exits 0", run.returncode == 0, run.stderr.read()[-400:])
        return got
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()


def grid_size(n, cw, ch, labels, caption_lines=0):
    cols = 1
    while cols * cols < n:
        cols += 1
    rows = (n + cols - 1) // cols
    cell_w = max(cw, MIN_CELL) if labels else cw
    band = BAND_LINES * LINE + 2 if labels else 0
    top = MARGIN + (caption_lines * LINE + GAP if caption_lines else 0)
    return (2 * MARGIN + cols * cell_w + (cols - 1) * GAP,
            top + rows * (ch + band) + (rows - 1) * GAP + MARGIN)


def main(tmp):
    data = os.path.join(tmp, "data")
    r = subprocess.run([TSRUN, "make-dataset", data, "--images", "60", "--classes", "3"],
                       capture_output=True, text=True, timeout=300)
    check("make-dataset", r.returncode == 0, r.stderr)
    sock = os.path.join(tmp, "p.sock")
    ts = os.path.join(tmp, "p.ts")
    with open(ts, "w") as f:
        f.write(f"""pipeline p =
    folder("data/train")
    | shuffle(seed = 7)
    | decode(rgb)
    | random_resized_crop(48)
    | color_jitter(brightness = 0.4, contrast = 0.4)
    | flip(horizontal)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(16)

serve p {{
    socket = "{sock}"
    epochs = 3
}}
""")
    # Grid: pixels only, then labelled; 7 samples from 1:55 run on into
    # epoch 2, as the trainer's stream does.
    a1, a3 = os.path.join(tmp, "a1.png"), os.path.join(tmp, "a3.png")
    r1 = preview(ts, "--start", "1:55", "--samples", "7", "--no-labels", "--threads", "1",
                 "-o", a1)
    r3 = preview(ts, "--start", "1:55", "--samples", "7", "--no-labels", "--threads", "3",
                 "-o", a3)
    lab = os.path.join(tmp, "lab.png")
    rl = preview(ts, "--start", "1:55", "--samples", "7", "-o", lab)
    same = open(a1, "rb").read() == open(a3, "rb").read()
    check("same PNG file for 1 and 3 threads", same)
    img = Image.open(a1)
    check("grid is RGB", img.mode == "RGB", img.mode)
    check("grid size (no labels)", img.size == grid_size(7, 48, 48, False), str(img.size))
    cells = cells_of(r1.stdout)
    check("7 cells listed", len(cells) == 7, str(len(cells)))
    check("positions 1:55..1:59 then 2:0, 2:1",
          [(c[4], c[5]) for c in cells] == [(1, 55), (1, 56), (1, 57),
                                           (1, 58), (1, 59), (2, 0), (2, 1)],
          str([(c[4], c[5]) for c in cells]))
    labelled = Image.open(lab)
    lcells = cells_of(rl.stdout)
    check("7 labelled cells", len(lcells) == 7)
    lw = grid_size(7, 48, 48, True)[0]
    check("labelled grid width", labelled.size[0] == lw, f"{labelled.size} vs width {lw}")
    check("labelled grid taller (caption and bands)", labelled.size[1] > img.size[1] + 3 * 32)
    check("caption in the PNG's Description",
          "un-normalized" in labelled.info.get("Description", ""),
          labelled.info.get("Description", "")[:80])
    check("class folder and file listed", re.search(r"class 00\d-\S+ file \S+\.jpg", rl.stdout)
          is not None)

    got = trainer(ts, sock, 16)
    check("trainer read 3 epochs of 60", len(got) == 180, str(len(got)))
    px = np.asarray(img)
    lpx = np.asarray(labelled)
    compared = 0
    for (x, y, w, h, e, i, label), lc in zip(cells, lcells):
        if (e, i) not in got:
            continue
        x_ref, l_ref = got[(e, i)]
        want = unnorm(x_ref)
        cell = px[y:y + h, x:x + w]
        diff = int(np.abs(cell.astype(int) - want.astype(int)).max())
        check(f"cell {e}:{i} equals the trainer's sample", diff == 0, f"max diff {diff}")
        check(f"cell {e}:{i} label is the trainer's", label == l_ref, f"{label} vs {l_ref}")
        lx, ly, lw_, lh_ = lc[:4]
        check(f"labelled cell {e}:{i} equals it too",
              np.array_equal(lpx[ly:ly + lh_, lx:lx + lw_], want))
        compared += 1
    check("compared 7 cells with the trainer", compared == 7, str(compared))

    # 1-channel uint16: shown gray, (x + 128) / 257, equal to the trainer's.
    sock16 = os.path.join(tmp, "g.sock")
    ts16 = os.path.join(tmp, "g16.ts")
    with open(ts16, "w") as f:
        f.write(f"""pipeline g =
    synthetic([20, 24], count = 10, channels = 1, depth = 16, classes = 4)
    | flip(horizontal)
    | batch(5)

serve g {{
    socket = "{sock16}"
    epochs = 1
}}
""")
    g = os.path.join(tmp, "g.png")
    rg = preview(ts16, "--samples", "4", "--start", "0:3", "--no-labels", "-o", g)
    gimg = Image.open(g)
    check("uint16 grid size", gimg.size == grid_size(4, 24, 20, False), str(gimg.size))
    gpx = np.asarray(gimg.convert("RGB"))
    got16 = trainer(ts16, sock16, 5)
    gc = cells_of(rg.stdout)
    check("4 uint16 cells", len(gc) == 4)
    for (x, y, w, h, e, i, label) in gc:
        ref = got16[(e, i)][0].view(np.uint16).astype(np.uint32)
        want = ((ref + 128) // 257).astype(np.uint8).reshape(20, 24)
        cell = gpx[y:y + h, x:x + w]
        ok = all(np.array_equal(cell[:, :, c], want) for c in range(3))
        check(f"uint16 gray cell {e}:{i} equals the trainer's", ok)

    # A tile + filter pipeline is read from a ring, as its trainer reads it.
    sockt = os.path.join(tmp, "t.sock")
    tst = os.path.join(tmp, "t.ts")
    with open(tst, "w") as f:
        f.write(f"""pipeline t =
    folder("data/train")
    | decode(gray)
    | tile(32, stride = 32)
    | filter(threshold = 0.9, max_fraction = 0.5)
    | batch(8)

serve t {{
    socket = "{sockt}"
    epochs = 1
}}
""")
    tp = os.path.join(tmp, "t.png")
    rt = preview(tst, "--samples", "9", "--no-labels", "-o", tp)
    tc = cells_of(rt.stdout)
    check("9 tile cells", len(tc) == 9, str(len(tc)))
    check("tile grid size", Image.open(tp).size == grid_size(9, 32, 32, False))
    check("tile caption says file names are unknown",
          "file names are not known" in rt.stdout)
    tpx = np.asarray(Image.open(tp))
    gott = trainer(tst, sockt, 8)
    for (x, y, w, h, e, i, label) in tc:
        want = gott[(e, i)][0].reshape(32, 32)
        ok = all(np.array_equal(tpx[y:y + h, x:x + w, c], want) for c in range(3))
        check(f"tile cell {e}:{i} equals the trainer's", ok and label == gott[(e, i)][1])

    # --stages: one row per sample, one column per plan stage; the last
    # column is the grid's sample.
    st = os.path.join(tmp, "st.png")
    rs = preview(ts, "--stages", "--samples", "2", "--start", "1:55", "--no-labels", "-o", st)
    names = re.findall(r"stage (\d+) (\S+(?: \S+)?) \(made", rs.stdout)
    stage_names = sorted(set(names), key=lambda t: int(t[0]))
    check("stages are the plan's", [n for _, n in stage_names] ==
          ["decode+random_resized_crop", "color_jitter", "output: flip+normalize+to"],
          str(stage_names))
    scells = cells_of(rs.stdout)
    check("2 rows x 3 stages", len(scells) == 6, str(len(scells)))
    simg = np.asarray(Image.open(st))
    for row in range(2):
        x, y, w, h, e, i, _ = scells[row * 3 + 2]
        want = unnorm(got[(e, i)][0])
        check(f"stages: last column of {e}:{i} is the trainer's sample",
              np.array_equal(simg[y:y + h, x:x + w], want))
    # The first stage of a random_resized_crop + flip sample, flipped like
    # the final one, is the final one before the colour and flip: compare
    # the middle column's shape at least, and that stages differ.
    x0, y0, w0, h0 = scells[0][:4]
    x1, y1, w1, h1 = scells[1][:4]
    check("colour jitter changes the pixels",
          not np.array_equal(simg[y0:y0 + h0, x0:x0 + w0], simg[y1:y1 + h1, x1:x1 + w1]))

    # views(...): a row per sample, one cell per view, each the trainer's
    # view (a float view un-normalized by its group's mean and std, a
    # uint8 one as it is); --stages ends in one column per view.
    vts = os.path.join(tmp, "v.ts")
    with open(vts, "w") as f:
        f.write("""pipeline v =
    folder("data/train")
    | shuffle(seed = 3)
    | decode(rgb)
    | views(2 = random_resized_crop(40) | flip(horizontal)
              | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]) | to(float32, nchw),
            1 = center_crop(24) | to(uint8))
    | batch(4)
serve v { epochs = 1 }
""")
    vpng = os.path.join(tmp, "v.png")
    rv = preview(vts, "--samples", "2", "--no-labels", "-o", vpng)
    vcells = [(m, int(v)) for m, v in zip(cells_of(rv.stdout),
                                           re.findall(r"label -?\d+ view (\d+)", rv.stdout))]
    check("views: 2 samples x 3 views", len(vcells) == 6, rv.stdout[-300:])
    vsock = os.path.join(tmp, "v.sock")
    run = subprocess.Popen([TSRUN, "run", vts, "--socket", vsock, "--wait", "1", "--quiet"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(300):
            if os.path.exists(vsock) or run.poll() is not None:
                break
            time.sleep(0.05)
        loader = tsrun.Loader(vsock, batch_size=2, timeout=60)
        views, labels = next(iter(loader))
        loader.close()
    finally:
        run.kill()
        run.wait()
    vimg = np.asarray(Image.open(vpng))
    for (x, y, w, h, e, i, label), v in vcells:
        t = views[v][i].numpy()
        want = unnorm(t) if v < 2 else t
        check(f"views: cell {e}:{i} view {v} is the trainer's view",
              e == 0 and label == int(labels[i]) and
              np.array_equal(vimg[y:y + h, x:x + w], want), f"{w}x{h}")
    rv = preview(vts, "--stages", "--samples", "1", "--no-labels", "-o", vpng)
    vnames = re.findall(r"stage \d+ (decode|view \d+ \(group \d+\))", rv.stdout)
    check("views: --stages ends in the views", vnames ==
          ["decode", "view 0 (group 0)", "view 1 (group 0)", "view 2 (group 1)"], str(vnames))

    # A normalize inside random_choice (and one inside that) is undone by
    # the branch each sample drew, replayed from its (epoch, index): every
    # cell is the pixels of the same pipeline without it; the trainer's
    # tensors say which branch each took, and more than one was.
    norms = [([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
             ([0.2, 0.3, 0.4], [0.5, 0.5, 0.5]), ([0.6, 0.5, 0.4], [0.3, 0.3, 0.3])]
    cts, csock = os.path.join(tmp, "c.ts"), os.path.join(tmp, "c.sock")
    with open(cts, "w") as f:
        f.write(f"""pipeline c =
    folder("data/train")
    | shuffle(seed = 7)
    | decode(rgb)
    | center_crop(40)
    | random_choice([normalize({norms[0][0]}, {norms[0][1]}),
                     random_choice([normalize({norms[1][0]}, {norms[1][1]}),
                                    normalize({norms[2][0]}, {norms[2][1]})])])
    | to(float32, nchw)
    | batch(4)
pipeline u = folder("data/train") | shuffle(seed = 7) | decode(rgb) | center_crop(40) | batch(4)
serve c {{ socket = "{csock}" epochs = 1 }}
""")
    cpng, upng = os.path.join(tmp, "c.png"), os.path.join(tmp, "u.png")
    rc_ = preview(cts, "--samples", "12", "--no-labels", "-o", cpng)
    preview(cts, "--pipeline", "u", "--samples", "12", "--no-labels", "-o", upng)
    check("random_choice's normalize: the caption says each sample's branch is undone",
          "as the random_apply or random_choice branch each drew leaves them" in rc_.stdout,
          rc_.stdout[:300])
    cpx, upx = np.asarray(Image.open(cpng)), np.asarray(Image.open(upng))
    diff = int(np.abs(cpx.astype(int) - upx.astype(int)).max()) if cpx.shape == upx.shape else -1
    check("random_choice's normalize undone: the cells are the pixels without it",
          diff == 0, f"max diff {diff}")
    gotc = trainer(cts, csock, 4)
    drawn = set()
    for (x, y, w, h, e, i, label) in cells_of(rc_.stdout):
        t = gotc[(e, i)][0]
        want = upx[y:y + h, x:x + w]
        ks = []
        for k, (m, sd) in enumerate(norms):
            v = t.astype(np.float32) * np.array(sd, np.float32)[:, None, None]
            v = (v + np.array(m, np.float32)[:, None, None]) * np.float32(255)
            v = np.clip(np.rint(np.where(v > 0, v, 0)), 0, 255).astype(np.uint8)
            if np.array_equal(v.transpose(1, 2, 0), want):
                ks.append(k)
        check(f"random_choice cell {e}:{i} is the trainer's sample by one branch", len(ks) == 1,
              str(ks))
        drawn.update(ks)
    check("random_choice: the cells drew more than one branch", len(drawn) >= 2, str(drawn))

    # A random_choice after a tile draws per tile and is not replayed: the
    # caption, made for a preview started at 2:5 (the draws it replays are
    # that sample's), names the first alternative's mean and std and says
    # so; every cell is the trainer's tile from the same start un-normalized
    # by them, whichever alternative it drew (the one before the tile
    # leaves uint8 either way).
    pts, psock = os.path.join(tmp, "pt.ts"), os.path.join(tmp, "pt.sock")
    with open(pts, "w") as f:
        f.write(f"""let a = normalize({norms[1][0]}, {norms[1][1]}) | to(uint8)
let b = normalize({norms[2][0]}, {norms[2][1]}) | to(uint8)
pipeline pt =
    folder("data/train")
    | shuffle(seed = 7)
    | decode(rgb)
    | center_crop(40)
    | random_choice([a, b])
    | tile(20)
    | random_choice([normalize({norms[1][0]}, {norms[1][1]}),
                     normalize({norms[2][0]}, {norms[2][1]})])
    | to(float32, nchw)
    | batch(4)
pipeline pu =
    folder("data/train") | shuffle(seed = 7) | decode(rgb) | center_crop(40)
    | random_choice([a, b]) | tile(20) | batch(4)
serve pt {{ socket = "{psock}" epochs = 3 }}
""")
    ppng = os.path.join(tmp, "pt.png")
    rp = preview(pts, "--samples", "8", "--start", "2:5", "-o", ppng)
    m, sd = norms[1]
    check("policy after a tile: the caption names its first alternative's mean and std",
          f"mean [{', '.join(f'{x:g}' for x in m)}], std [{', '.join(f'{x:g}' for x in sd)}]"
          in rp.stdout and "not replayed here" in rp.stdout, rp.stdout[:400])
    gotp = trainer(pts, psock, 4, start="2:5")
    ppx = np.asarray(Image.open(ppng))
    pcells = cells_of(rp.stdout)
    check("policy after a tile: 8 cells", len(pcells) == 8, str(len(pcells)))
    # the same tiles before the policy: which alternative each drew
    upng2 = os.path.join(tmp, "pu.png")
    ru = preview(pts, "--pipeline", "pu", "--samples", "8", "--start", "2:5", "-o", upng2)
    upx2, ucells = np.asarray(Image.open(upng2)), cells_of(ru.stdout)
    drew = set()
    for k, (x, y, w, h, e, i, label) in enumerate(pcells):
        t = gotp[(e, i)][0]
        shown = []
        for mm, ss in (norms[1], norms[2]):
            v = t.astype(np.float32) * np.array(ss, np.float32)[:, None, None]
            v = (v + np.array(mm, np.float32)[:, None, None]) * np.float32(255)
            shown.append(np.clip(np.rint(np.where(v > 0, v, 0)), 0, 255)
                         .astype(np.uint8).transpose(1, 2, 0))
        check(f"policy after a tile: cell {e}:{i} is the trainer's by the first alternative",
              np.array_equal(shown[0], ppx[y:y + h, x:x + w]))
        ux, uy, uw, uh = ucells[k][:4] if k < len(ucells) else (0, 0, 0, 0)
        drew.update(j for j in (0, 1)
                    if np.array_equal(shown[j], upx2[uy:uy + uh, ux:ux + uw]))
    check("policy after a tile: the tiles drew both alternatives", drew == {0, 1}, str(drew))

    # Refusals: a clear message and a non-zero exit.
    big = os.path.join(tmp, "big.ts")
    with open(big, "w") as f:
        f.write("pipeline b = synthetic([2048, 2048], count = 64) | batch(1)\n")
    r = preview(big, "--samples", "16", "-o", os.path.join(tmp, "b.png"), expect=2)
    check("a picture over the limit is refused with its size",
          re.search(r"would be \d+x\d+ pixels \(\d+ MiB\), over the limit of 64 MiB",
                    r.stderr) is not None, r.stderr.strip())
    check("nothing written for a refused picture", not os.path.exists(os.path.join(tmp, "b.png")))
    r = preview(ts, "--samples", "0", "-o", os.path.join(tmp, "x.png"), expect=2)
    check("--samples 0 refused", "--samples" in r.stderr, r.stderr.strip())
    r = preview(ts, expect=2)
    check("-o required", "-o FILE.png" in r.stderr, r.stderr.strip())
    r = preview(ts, "--start", "0:60", "-o", os.path.join(tmp, "x.png"), expect=2)
    check("--start past the epoch refused", "past the end of an epoch" in r.stderr,
          r.stderr.strip())
    r = preview(ts, "--epoch", "1", "--start", "0:1", "-o", os.path.join(tmp, "x.png"),
                expect=2)
    check("--epoch with --start refused", "give one" in r.stderr, r.stderr.strip())
    r = preview(ts, "-o", os.path.join(tmp, "no", "such", "dir.png"), expect=1)
    check("unwritable picture path named", "cannot write" in r.stderr, r.stderr.strip())


with tempfile.TemporaryDirectory() as tmp:
    main(tmp)
if failures:
    print(f"{len(failures)} failure(s):", ", ".join(failures))
    sys.exit(1)
print("all preview checks passed")
