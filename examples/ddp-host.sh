#!/bin/sh
# ddp-host.sh - one host: a DDP job of two ranks and a lone trainer read one
# tsrun. The two ranks split every epoch (each reads half, the same number
# of batches; tensorsocket(7), "Jobs"); the lone trainer reads all of it.
# Needs the quickstart's data (tsrun make-dataset data --images 2000) and
# torchrun (Debian's torch 1.13 under Python 3.11 needs "-r 1 -t 1", set
# here: its default "-r 0" fails with AttributeError: 'NoneType' object
# has no attribute 'get', tensorsocket(7) "Launching"; newer torchrun does
# not).
set -eu
cd "$(dirname "$0")/.."
TSRUN=${TSRUN:-tsrun}
PY=${PY:-/usr/bin/python3}
sock=/tmp/tsrun-quickstart.sock

"$TSRUN" run examples/quickstart.ts --wait 3 &
tsrun_pid=$!
while [ ! -S "$sock" ]; do sleep 0.1; done
"$PY" -m torch.distributed.run --standalone --nproc_per_node 2 -r 1 -t 1 \
	examples/train_ddp.py --socket "$sock" --job ddp &
"$PY" examples/train.py --socket "$sock" &
wait
