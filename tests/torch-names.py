#!/usr/bin/python3
"""Names and defaults of the references where an operator bears their name.

Runs under /usr/bin/python3 (Debian's torchvision 0.14). Exit 77 (skip)
when torchvision cannot be imported.

For each tsrun operator named after a torchvision transform or function
(TORCHVISION below), every parameter of torchvision 0.14's signature
(inspect.signature; the image, inplace and transforms' callables aside)
must be a tsrun parameter of the same name (or its alias) with the same
default, and every tsrun parameter must be one of torchvision's, as
`tsrun check --list-parameters` prints them. tsrun.Mixup is held to
timm.data.Mixup's signature the same way (timm is not installed here: its
signature is transcribed below). The differences found must be exactly
DELIBERATE's, each of which tsrun-pipeline(5)'s "DIFFERENCES FROM
TORCHVISION" section (or tensorsocket(7) for Mixup) names: a new
difference, or a listed one that went away, fails.
"""
import inspect
import os
import re
import subprocess
import sys

try:
    import torchvision.transforms as T
    import torchvision.transforms.functional as F
except Exception as e:  # noqa: BLE001
    print("skip: torchvision not importable:", e)
    sys.exit(77)

TSRUN = os.environ.get("TSRUN")
SRC = os.environ.get("TS_SRCDIR")
if not TSRUN or not SRC:
    print("FAIL: TSRUN and TS_SRCDIR must be set")
    sys.exit(1)
sys.path.insert(0, os.path.join(SRC, "src", "python"))

# tsrun operator -> the torchvision callable it is named after
TORCHVISION = {
    "resize": T.Resize, "center_crop": T.CenterCrop, "random_crop": T.RandomCrop,
    "random_resized_crop": T.RandomResizedCrop, "flip": T.RandomHorizontalFlip,
    "color_jitter": T.ColorJitter, "grayscale": T.Grayscale, "normalize": T.Normalize,
    "invert": F.invert, "posterize": F.posterize, "solarize": F.solarize,
    "autocontrast": F.autocontrast, "equalize": F.equalize,
    "adjust_brightness": F.adjust_brightness, "adjust_contrast": F.adjust_contrast,
    "adjust_saturation": F.adjust_saturation, "adjust_hue": F.adjust_hue,
    "adjust_sharpness": F.adjust_sharpness, "adjust_gamma": F.adjust_gamma,
    "gaussian_blur": T.GaussianBlur, "rotate": F.rotate, "affine": F.affine, "pad": T.Pad,
    "erase": F.erase, "perspective": F.perspective, "random_rotation": T.RandomRotation,
    "random_affine": T.RandomAffine, "random_perspective": T.RandomPerspective,
    "random_apply": T.RandomApply, "random_choice": T.RandomChoice,
    "random_erasing": T.RandomErasing, "rand_augment": T.RandAugment,
    "trivial_augment_wide": T.TrivialAugmentWide, "auto_augment": T.AutoAugment,
    "augmix": T.AugMix,
}
SKIP = {"img", "inplace"}

# timm.data.Mixup.__init__ (timm/data/mixup.py, timm 0.9), transcribed:
#   def __init__(self, mixup_alpha=1., cutmix_alpha=0., cutmix_minmax=None,
#                prob=1.0, switch_prob=0.5, mode='batch', correct_lam=True,
#                label_smoothing=0.1, num_classes=1000)
TIMM_MIXUP = [("mixup_alpha", 1.0), ("cutmix_alpha", 0.0), ("cutmix_minmax", None),
              ("prob", 1.0), ("switch_prob", 0.5), ("mode", "batch"), ("correct_lam", True),
              ("label_smoothing", 0.1), ("num_classes", 1000)]

# (operator, parameter): why tsrun differs from the reference on purpose.
# kind: "extra" (tsrun's own), "missing" (not taken), "default", "name".
DELIBERATE = {
    ("resize", "width", "extra"): "resize(h, w) as well as resize([h, w])",
    ("resize", "antialias", "default"): "true: torchvision's None is true on PIL",
    ("center_crop", "width", "extra"): "center_crop(h, w)",
    ("random_crop", "width", "extra"): "random_crop(h, w)",
    ("random_crop", "padding", "default"): "0 pixels: torchvision's None",
    ("random_crop", "pad_if_needed", "missing"): "the checker refuses a crop larger "
                                                 "than a known image",
    ("random_crop", "fill", "missing"): "zeros only",
    ("random_crop", "padding_mode", "missing"): "constant only",
    ("random_resized_crop", "width", "extra"): "random_resized_crop(h, w)",
    ("random_resized_crop", "antialias", "default"): "true: torchvision's None is true "
                                                     "on PIL",
    ("flip", "direction", "extra"): "one operator for RandomHorizontalFlip and "
                                    "RandomVerticalFlip",
    ("grayscale", "num_output_channels", "name"): "channels",
    ("grayscale", "p", "extra"): "RandomGrayscale's p, default 1 (always)",
    ("invert", "p", "extra"): "RandomInvert's p, default 1 (always)",
    ("posterize", "p", "extra"): "RandomPosterize's p, default 1 (always)",
    ("solarize", "p", "extra"): "RandomSolarize's p, default 1 (always)",
    ("autocontrast", "p", "extra"): "RandomAutocontrast's p, default 1 (always)",
    ("equalize", "p", "extra"): "RandomEqualize's p, default 1 (always)",
    ("rotate", "fill", "default"): "0: torchvision's None fills black",
    ("affine", "translate", "default"): "[0, 0] (required there)",
    ("affine", "scale", "default"): "1 (required there)",
    ("affine", "shear", "default"): "0 (required there)",
    ("affine", "fill", "default"): "0: torchvision's None fills black",
    ("erase", "v", "name"): "value, default 0 (a number per channel, not a tensor)",
    ("perspective", "fill", "default"): "0: torchvision's None fills black",
    ("random_apply", "transforms", "name"): "ops (tsrun operators, not callables)",
    ("random_choice", "transforms", "name"): "ops (tsrun operators, not callables)",
    ("rand_augment", "fill", "default"): "0: torchvision's None fills black",
    ("trivial_augment_wide", "fill", "default"): "0: torchvision's None fills black",
    ("auto_augment", "fill", "default"): "0: torchvision's None fills black",
    ("Mixup", "seed", "extra"): "the draws' key (tsrun's own)",
    ("Mixup", "trace", "extra"): "the draw trace (tsrun's own)",
}
failures = []


def check(name, ok, detail=""):
    print(("ok   " if ok else "FAIL ") + name + (": " + detail if detail else ""))
    if not ok:
        failures.append(name)


def tsrun_params():
    """{operator: {parameter: (default text, alias)}}."""
    r = subprocess.run([TSRUN, "check", "--list-parameters"], capture_output=True,
                       text=True, timeout=60)
    if r.returncode:
        raise SystemExit("FAIL: tsrun check --list-parameters: " + r.stderr)
    ops = {}
    for line in r.stdout.splitlines():
        op, name, default, alias = line.split("\t")
        ops.setdefault(op, {})[name] = (default, None if alias == "-" else alias)
    return ops


def number(s):
    m = re.fullmatch(r"(-?[0-9.]+)/([0-9.]+)", s)
    return float(m.group(1)) / float(m.group(2)) if m else float(s)


def same_default(text, ref):
    """Whether tsrun's documented default text is torchvision's value ref."""
    if ref is inspect.Parameter.empty:
        return text == "required"
    if ref is None:
        return text == "-"
    if hasattr(ref, "value"):  # InterpolationMode, AutoAugmentPolicy
        ref = ref.value
    if isinstance(ref, bool):
        return text == ("true" if ref else "false")
    if isinstance(ref, str):
        return text == ref
    if isinstance(ref, (tuple, list)):
        parts = text.split("..") if ".." in text else text.strip("[]").split(",")
        try:
            return len(parts) == len(ref) and all(
                abs(number(p.strip()) - float(v)) < 1e-9 for p, v in zip(parts, ref))
        except ValueError:
            return False
    try:
        return abs(number(text) - float(ref)) < 1e-9
    except ValueError:
        return False


def differences(op, ours, ref):
    """The set of (op, parameter, kind) where ours differs from ref (a list
    of (name, default))."""
    found = set()
    taken = set()
    for name, default in ref:
        mine = next((n for n, (_, alias) in ours.items() if name in (n, alias)), None)
        if mine is None:
            kind = "missing"
            renamed = [k for k in DELIBERATE if k[:2] == (op, name) and k[2] == "name"]
            if renamed:
                kind = "name"
                target = DELIBERATE[renamed[0]].split(",")[0].split(" ")[0]
                taken.add(target)
            found.add((op, name, kind))
            continue
        taken.add(mine)
        if not same_default(ours[mine][0], default):
            found.add((op, name, "default"))
    for name in ours:
        if name not in taken:
            found.add((op, name, "extra"))
    return found


def signature(fn):
    return [(n, p.default) for n, p in inspect.signature(fn).parameters.items()
            if n not in SKIP]


def main():
    ops = tsrun_params()
    found = set()
    for op, fn in TORCHVISION.items():
        check("%s is a tsrun operator" % op, op in ops)
        if op in ops:
            found |= differences(op, ops[op], signature(fn))
    try:
        import tsrun
        sig = inspect.signature(tsrun.Mixup.__init__)
        ours = {}
        for n, p in sig.parameters.items():
            d = p.default
            if n != "self":
                ours[n] = ("-" if d is None else str(d).lower() if isinstance(d, bool)
                           else str(d), None)
        found |= differences("Mixup", ours, TIMM_MIXUP)
    except ImportError as e:
        check("tsrun.Mixup importable", False, str(e))
    want = set(DELIBERATE)
    for k in sorted(found - want):
        check("%s(%s): %s difference not listed as deliberate" % k, False)
    for k in sorted(want - found):
        check("%s(%s): listed %s difference not found (fixed? drop it)" % k, False)
    check("differences from torchvision and timm: exactly the deliberate ones",
          found == want, "%d" % len(found))
    # each deliberate difference is named in the man page's list
    page = open(os.path.join(SRC, "man", "tsrun-pipeline.5")).read()
    sect = page.split(".Sh DIFFERENCES FROM TORCHVISION", 1)
    check("tsrun-pipeline(5) has DIFFERENCES FROM TORCHVISION", len(sect) == 2)
    if len(sect) == 2:
        body = sect[1].split("\n.Sh ", 1)[0]
        for op, name, _ in sorted(want):
            if op != "Mixup":
                check("tsrun-pipeline(5) lists %s %s" % (op, name),
                      re.search(r"\b%s\b" % op, body) is not None and
                      re.search(r"\b%s\b" % name, body) is not None)
    if failures:
        print("FAILED: %d" % len(failures))
        return 1
    print("ok: torch-names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
