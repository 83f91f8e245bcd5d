#!/usr/bin/python3
"""The seed articles' own approach, as a speed baseline for Tessera (facts.md, "The seed's own
approach"): 2-D Poisson -lap u = 2 pi^2 sin(pi x) sin(pi y) on the unit square, u = 0 on the
boundary; network [2, 50, 50, 50, 1] tanh, Adam lr 1e-3, 4096 collocation points resampled every
100 iterations, PyTorch DistributedDataParallel with per-rank seeds; derivatives by nested
autograd.

    /usr/bin/python3 tools/bench/seed_poisson_ddp.py --iterations 300            # one rank
    /usr/bin/python3 tools/bench/seed_poisson_ddp.py --world 2 --threads 1       # two local ranks
    /usr/bin/python3 tools/bench/seed_poisson_ddp.py --rank 0 --world 2 --init tcp://host:29500

Without --rank the script starts `--world` local ranks itself (no torchrun or mpiexec needed).
Rank 0 prints one JSON line: {"ms_per_iteration": ..., "rel_l2": ..., ...}. Needs Debian's
python3-torch (`apt-get install -y python3-torch`).
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.nn as nn


def parse_arguments():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--warmup", type=int, default=20, help="iterations left out of the timing")
    parser.add_argument("--points", type=int, default=4096, help="collocation points per rank")
    parser.add_argument("--boundary-points", type=int, default=512)
    parser.add_argument("--resample-every", type=int, default=100)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads per rank")
    parser.add_argument("--seed", type=int, default=1234)
    parser.add_argument("--world", type=int, default=1, help="number of ranks")
    parser.add_argument("--rank", type=int, default=None, help="this process's rank (else start all)")
    parser.add_argument("--init", default=None, help="init_method (default: a file:// in a temporary folder)")
    return parser.parse_args()


def launch_local_ranks(args):
    """Starts every rank as a child process sharing one file:// rendezvous; returns rank 0's output."""
    folder = tempfile.mkdtemp(prefix="seed_ddp_")
    init = args.init or "file://" + os.path.join(folder, "rendezvous")
    children = []
    for rank in range(args.world):
        command = [sys.executable, os.path.abspath(__file__)] + sys.argv[1:] + ["--rank", str(rank), "--init", init]
        children.append(subprocess.Popen(command, stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL))
    output, _ = children[0].communicate()
    codes = [child.wait() for child in children]
    sys.stdout.write(output.decode())
    return max(abs(code) for code in codes)


def exact(x):
    return torch.sin(math.pi * x[:, 0:1]) * torch.sin(math.pi * x[:, 1:2])


def boundary_points(n, generator, options):
    t = torch.rand(n, 1, generator=generator).to(**options)
    side = torch.randint(0, 4, (n, 1), generator=generator).to(options["device"])
    zero, one = torch.zeros_like(t), torch.ones_like(t)
    x = torch.where(side == 0, zero, torch.where(side == 1, one, t))
    y = torch.where(side == 2, zero, torch.where(side == 3, one, t))
    return torch.cat([x, y], 1)


def main():
    args = parse_arguments()
    if args.rank is None:
        return launch_local_ranks(args)
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(args.rank % torch.cuda.device_count())
    dtype = torch.float32 if args.dtype == "float32" else torch.float64
    options = {"device": device, "dtype": dtype}
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", init_method=args.init,
                            rank=args.rank, world_size=args.world)

    torch.manual_seed(args.seed)  # the same initial network on every rank (DDP broadcasts it anyway)
    layers = []
    widths = [2, 50, 50, 50, 1]
    for k in range(len(widths) - 1):
        layers.append(nn.Linear(widths[k], widths[k + 1]))
        if k + 2 < len(widths):
            layers.append(nn.Tanh())
    network = nn.Sequential(*layers).to(**options)
    model = nn.parallel.DistributedDataParallel(network)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    generator = torch.Generator().manual_seed(args.seed + 1000 * (args.rank + 1))  # per-rank points

    def source(x):
        return 2 * math.pi ** 2 * torch.sin(math.pi * x[:, 0:1]) * torch.sin(math.pi * x[:, 1:2])

    started = None
    for iteration in range(args.iterations):
        if iteration == args.warmup:
            if device.type == "cuda":
                torch.cuda.synchronize()
            started = time.perf_counter()
        if iteration % args.resample_every == 0:
            interior = torch.rand(args.points, 2, generator=generator).to(**options).requires_grad_(True)
            boundary = boundary_points(args.boundary_points, generator, options)
        optimizer.zero_grad()
        u = model(interior)
        grad = torch.autograd.grad(u.sum(), interior, create_graph=True)[0]
        u_xx = torch.autograd.grad(grad[:, 0].sum(), interior, create_graph=True)[0][:, 0:1]
        u_yy = torch.autograd.grad(grad[:, 1].sum(), interior, create_graph=True)[0][:, 1:2]
        residual = u_xx + u_yy + source(interior)
        loss = (residual ** 2).mean() + (model(boundary) ** 2).mean()
        loss.backward()
        optimizer.step()
    if device.type == "cuda":
        torch.cuda.synchronize()
    timed = args.iterations - args.warmup
    ms = 1000.0 * (time.perf_counter() - started) / timed if started is not None and timed > 0 else float("nan")

    with torch.no_grad():
        grid = torch.linspace(0, 1, 101, **options)
        xy = torch.stack(torch.meshgrid(grid, grid, indexing="ij"), -1).reshape(-1, 2)
        prediction, truth = network(xy), exact(xy)
        rel_l2 = (torch.linalg.norm(prediction - truth) / torch.linalg.norm(truth)).item()
    if args.rank == 0:
        print(json.dumps({"ms_per_iteration": ms, "timed_iterations": timed, "rel_l2": rel_l2,
                          "loss": loss.item(), "ranks": args.world, "points": args.points,
                          "device": args.device, "dtype": args.dtype, "torch": torch.__version__}))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
