#!/usr/bin/python3
"""train_dino.py - a DINO-style self-distillation loop on a views(...)
pipeline (examples/dino.ts): each batch is a list of views, the global
ones first; the teacher sees the global views, the student every view,
and the student learns to match the teacher's centred, sharpened output
on the other views (Caron et al. 2021, Algorithm 1), the teacher an EMA
of the student. Small networks, so that it runs on a CPU.

    /usr/bin/python3 examples/train_dino.py --socket /tmp/tsrun-dino.sock

Prints one line per epoch: "epoch E: B batches, S samples, views
G x HxW + L x hxw, loss X" (what tests/views.py reads).
"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import tsrun


def net(out_dim):
    # Global average pooling: one network for 224 and 96 crops alike.
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.ReLU(),
        nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, out_dim))


def dino_loss(student, teacher, center, n_global, tps=0.1, tpt=0.04):
    """Cross-entropy of every student view against every other global
    teacher view."""
    t = [F.softmax((x - center) / tpt, dim=-1).detach() for x in teacher]
    loss, terms = 0.0, 0
    for i, ti in enumerate(t):
        for j, sj in enumerate(student):
            if i == j:
                continue  # a view is not its own target
            loss = loss + torch.sum(-ti * F.log_softmax(sj / tps, dim=-1), dim=-1).mean()
            terms += 1
    return loss / terms


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--socket", default="/tmp/tsrun-dino.sock")
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--epochs", type=int, default=0, help="0: until the stream ends")
    ap.add_argument("--global-views", type=int, default=2)
    ap.add_argument("--dim", type=int, default=64)
    a = ap.parse_args()
    torch.manual_seed(0)
    loader = tsrun.Loader(a.socket, batch_size=a.batch)
    shapes = loader.views
    if not shapes:
        raise SystemExit("train_dino.py: the pipeline makes no views; serve examples/dino.ts")
    student, teacher = net(a.dim), net(a.dim)
    teacher.load_state_dict(student.state_dict())
    for p in teacher.parameters():
        p.requires_grad = False
    opt = torch.optim.AdamW(student.parameters(), lr=1e-3)
    center = torch.zeros(a.dim)
    g = a.global_views
    epoch = 0
    while a.epochs == 0 or epoch < a.epochs:
        batches = samples = 0
        total = 0.0
        for views, labels in loader:
            if len(views) != len(shapes):
                raise SystemExit(f"train_dino.py: {len(views)} views, expected {len(shapes)}")
            for v, (shape, _) in zip(views, shapes):
                if tuple(v.shape[1:]) != tuple(shape) or v.shape[0] != labels.shape[0]:
                    raise SystemExit(f"train_dino.py: a view of shape {tuple(v.shape)}")
            # the crops (float nchw; a uint8 view, for display, is left out)
            crops = [v for v in views if v.is_floating_point()]
            with torch.no_grad():
                teacher_out = [teacher(v) for v in crops[:g]]
            student_out = [student(v) for v in crops]
            loss = dino_loss(student_out, teacher_out, center, g)
            opt.zero_grad()
            loss.backward()
            opt.step()
            with torch.no_grad():
                for ps, pt in zip(student.parameters(), teacher.parameters()):
                    pt.mul_(0.996).add_(ps.detach(), alpha=0.004)
                center = 0.9 * center + 0.1 * torch.cat(teacher_out).mean(0)
            batches += 1
            samples += labels.shape[0]
            total += float(loss)
        if batches == 0:
            break  # the stream ended
        groups = []
        for shape, _ in shapes:
            hw = "x".join(str(d) for d in (shape[1:] if shape[0] <= 4 else shape[:2]))
            if groups and groups[-1][1] == hw:
                groups[-1][0] += 1
            else:
                groups.append([1, hw])
        desc = " + ".join(f"{n} x {hw}" for n, hw in groups)
        print(f"epoch {loader.epoch}: {batches} batches, {samples} samples, views {desc}, "
              f"loss {total / batches:.4f}", flush=True)
        epoch += 1
    loader.close()


if __name__ == "__main__":
    main()
