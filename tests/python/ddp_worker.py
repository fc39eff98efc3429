"""A data-parallel job for test_train_distributed.py, started by torchrun: a hybrid
model (linear, qfleet circuit layer, linear) in torch.nn.parallel.DistributedDataParallel
over torch.distributed's Gloo backend; each rank takes its share of a global batch of
16, SGD for 5 steps; rank 0 saves the parameters to argv[1]."""
import sys

import torch
import torch.distributed as dist

import qfleet


def main(out):
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(3)
    c = qfleet.Circuit(3)
    c.angle_embedding([0, 1, 2]).strongly_entangling_layers([0, 1, 2], 2)
    for q in range(3):
        c.expval(f"Z{q}")
    model = torch.nn.Sequential(torch.nn.Linear(3, 3), qfleet.QuantumLayer(c, seed=5), torch.nn.Linear(3, 1)).double()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    gen = torch.Generator().manual_seed(77)
    per = 16 // world
    for _ in range(5):
        x = torch.randn(16, 3, generator=gen, dtype=torch.float64)  # the same on every rank
        y = x.sum(1).sin()
        xs, ys = x[rank * per:(rank + 1) * per], y[rank * per:(rank + 1) * per]
        opt.zero_grad()
        # DDP averages the ranks' gradients: scale so the result is the global batch's sum / 16.
        ((ddp(xs).squeeze(1) - ys).square().sum() * world / 16).backward()
        opt.step()
    if rank == 0:
        torch.save([p.detach() for p in model.parameters()], out)
    # No rank tears Gloo down while another still uses it: a rank that reached
    # destroy_process_group while rank 0 was saving aborted in Gloo's shutdown
    # ("terminate called without an active exception", CI of stop 40).
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main(sys.argv[1])
