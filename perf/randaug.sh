#!/bin/sh
# The RandAugment recipe (examples/imagenet-randaug.ts: RandomResizedCrop
# + flip + rand_augment(2, 9) + normalize + random_erasing(0.25)) against
# the same torchvision recipe in a DataLoader (perf/dataloader.py --recipe
# randaug), A B A B, 3 pairs by default, with CPU time, peak RSS and the
# machine's other load recorded for every run: perf/compare.py's
# conventions (see it for the options, e.g. --images, --cpus, --json).
exec python3 "$(dirname "$0")/compare.py" --mode randaug "$@"
