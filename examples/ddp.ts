# Data-parallel training on several hosts: one tsrun per node serves that
# node's share of every epoch (shard, after the shuffle: equal across the
# nodes, different every epoch), and the node's DDP ranks split that share
# as a job (tensorsocket(7), "Jobs"; examples/train_ddp.py).
#
#   GROUP_RANK=0 GROUP_WORLD_SIZE=2 tsrun run examples/ddp.ts &   # node 0 of 2
#   torchrun --nnodes 2 --node_rank 0 --nproc_per_node 4 -r 1 -t 1 ... examples/train_ddp.py \
#       --socket /tmp/tsrun-ddp.sock --job ddp
#
# Under Slurm, SLURM_NODEID and SLURM_NNODES name the node instead
# (examples/ddp-slurm.sbatch). Relative paths resolve against this file's
# folder. "-r 1 -t 1": Debian's torchrun (torch 1.13, Python 3.11) fails
# without them (tensorsocket(7), "Launching").

pipeline ddp =
    folder("../data/train")
    | shuffle(seed = 1)
    | shard(drop_last = false)
    | decode(rgb)
    | random_resized_crop(128)
    | flip(horizontal)
    | normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])
    | to(float32, nchw)
    | batch(32)

serve ddp {
    socket = "/tmp/tsrun-ddp.sock"
    epochs = 4
    ring   = 16 batches
}
