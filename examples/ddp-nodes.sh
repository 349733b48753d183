#!/bin/sh
# ddp-nodes.sh NODE NODES MASTER - run on every node of a multi-node DDP job
# under torchrun: this node's tsrun serves its share of every epoch
# (shard() in examples/ddp.ts reads GROUP_RANK and GROUP_WORLD_SIZE, as
# torchrun names the node's index and the node count for its workers; tsrun
# is not a torchrun worker, so they are set for it here), then torchrun
# starts the node's ranks, which split that share as one job.
#
# (-r 1 -t 1 for Debian's torch 1.13 under Python 3.11: tensorsocket(7),
# "Launching").
#
#   node0$ examples/ddp-nodes.sh 0 2 node0
#   node1$ examples/ddp-nodes.sh 1 2 node0
set -eu
[ $# -eq 3 ] || { echo "usage: $0 NODE NODES MASTER_ADDR" >&2; exit 2; }
node=$1 nodes=$2 master=$3
cd "$(dirname "$0")/.."
TSRUN=${TSRUN:-tsrun}
PY=${PY:-/usr/bin/python3}
per_node=${PER_NODE:-4}
sock=/tmp/tsrun-ddp.sock

GROUP_RANK=$node GROUP_WORLD_SIZE=$nodes "$TSRUN" run examples/ddp.ts --wait "$per_node" &
while [ ! -S "$sock" ]; do sleep 0.1; done
"$PY" -m torch.distributed.run --nnodes "$nodes" --node_rank "$node" \
	--nproc_per_node "$per_node" -r 1 -t 1 --master_addr "$master" --master_port 29500 \
	examples/train_ddp.py --socket "$sock" --job ddp
wait
