#!/usr/bin/python3
"""The seed articles' own approach, as a speed baseline for Tessera (docs/benchmarks.md, "The
seed script as a baseline"): 2-D Poisson -lap u = 2 pi^2 sin(pi x) sin(pi y) on the unit
square, u = 0 on the boundary; network [2, 50, 50, 50, 1] tanh, Adam lr 1e-3, 4096 collocation
points resampled every 100 iterations, PyTorch DistributedDataParallel with per-rank seeds;
derivatives by nested autograd.

    /usr/bin/python3 tools/bench/seed_poisson_ddp.py --iterations 300            # one rank
    /usr/bin/python3 tools/bench/seed_poisson_ddp.py --world 2 --threads 1       # two local ranks
    /usr/bin/python3 tools/bench/seed_poisson_ddp.py --rank 0 --world 2 --init tcp://host:29500

Without --rank the script starts `--world` local ranks itself (no torchrun or mpiexec needed).
Rank 0 prints one JSON line: {"ms_per_iteration": ..., "rel_l2": ..., ...}. Needs Debian's
python3-torch (`apt-get install -y python3-torch`).

Options for time-to-accuracy (tools/bench/time_to_accuracy.py); without them the script is the
seed as published:
  --eval-every N      rank 0 evaluates the relative L2 error on the 101 x 101 grid every N
                      iterations (and at iteration 0), outside the timed wall clock, and the JSON
                      gets "curve" [[iteration, wall_s, rel_l2], ...] and "wall_to_1e-2" /
                      "wall_to_1e-3" (the first wall time at which rel_l2 <= 1e-2 / 1e-3, null if
                      never). The wall clock starts at iteration 0 (warm-up included).
  --time-limit S      stop once the timed wall clock passes S seconds (checked every N iterations,
                      or every 10 without --eval-every; all ranks stop at the same iteration).
  --stop-at E         stop once the evaluated rel_l2 <= E (needs --eval-every).
  --tessera-settings  Tessera's settings for cases/poisson2d.json: inputs normalised to [-1, 1],
                      Xavier-normal weights and zero biases, boundary weight 100, Adam lr 1e-3
                      times 0.9 every 1000 iterations (default --iterations 3000), then
                      --lbfgs-iterations (default 500) of torch.optim.LBFGS (lr 1, history 50,
                      strong Wolfe line search) on freshly drawn points (--lbfgs-points per
                      rank, default --points); the L-BFGS loss is averaged over the ranks so
                      that every rank takes the same decisions.
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
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=None,
        help="Adam iterations (default 300; 3000 with --tessera-settings)",
    )
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
    parser.add_argument(
        "--rank", type=int, default=None, help="this process's rank (else start all)"
    )
    parser.add_argument(
        "--init", default=None, help="init_method (default: a file:// in a temporary folder)"
    )
    parser.add_argument(
        "--eval-every", type=int, default=0, help="rel L2 every N iterations (0: only at the end)"
    )
    parser.add_argument(
        "--time-limit", type=float, default=None, help="stop after this many timed seconds"
    )
    parser.add_argument(
        "--stop-at", type=float, default=None, help="stop once rel_l2 <= this (with --eval-every)"
    )
    parser.add_argument(
        "--tessera-settings", action="store_true", help="Tessera's settings (see above)"
    )
    parser.add_argument("--lbfgs-iterations", type=int, default=500, help="with --tessera-settings")
    parser.add_argument(
        "--lbfgs-points",
        type=int,
        default=None,
        help="collocation points per rank in the L-BFGS stage (default --points)",
    )
    parser.add_argument(
        "--boundary-weight",
        type=float,
        default=None,
        help="default 1 (100 with --tessera-settings)",
    )
    args = parser.parse_args()
    if args.iterations is None:
        args.iterations = 3000 if args.tessera_settings else 300
    if args.lbfgs_points is None:
        args.lbfgs_points = args.points
    if args.boundary_weight is None:
        args.boundary_weight = 100.0 if args.tessera_settings else 1.0
    if args.stop_at is not None and args.eval_every <= 0:
        parser.error("--stop-at needs --eval-every")
    return args


def launch_local_ranks(args):
    """Starts every rank as a child process sharing one file:// rendezvous; returns rank 0's output."""
    folder = tempfile.mkdtemp(prefix="seed_ddp_")
    init = args.init or "file://" + os.path.join(folder, "rendezvous")
    children = []
    for rank in range(args.world):
        command = (
            [sys.executable, os.path.abspath(__file__)]
            + sys.argv[1:]
            + ["--rank", str(rank), "--init", init]
        )
        children.append(
            subprocess.Popen(command, stdout=subprocess.PIPE if rank == 0 else subprocess.DEVNULL)
        )
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


class Normalise(nn.Module):
    """Maps the unit square onto [-1, 1]^2 (Tessera's input normalisation)."""

    def forward(self, x):
        return 2.0 * x - 1.0


class Clock:
    """Wall clock of the training loop with evaluation and stop checks left out."""

    def __init__(self, device):
        self.device, self.paused, self.start = device, 0.0, None
        self.sync()
        self.start = time.perf_counter()

    def sync(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize()

    def now(self):
        return time.perf_counter() - self.start - self.paused


def relative_l2(network, options):
    with torch.no_grad():
        grid = torch.linspace(0, 1, 101, **options)
        xy = torch.stack(torch.meshgrid(grid, grid, indexing="ij"), -1).reshape(-1, 2)
        prediction, truth = network(xy), exact(xy)
        return (torch.linalg.norm(prediction - truth) / torch.linalg.norm(truth)).item()


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
    dist.init_process_group(
        "nccl" if device.type == "cuda" else "gloo",
        init_method=args.init,
        rank=args.rank,
        world_size=args.world,
    )

    torch.manual_seed(
        args.seed
    )  # the same initial network on every rank (DDP broadcasts it anyway)
    layers = []
    widths = [2, 50, 50, 50, 1]
    for k in range(len(widths) - 1):
        layers.append(nn.Linear(widths[k], widths[k + 1]))
        if k + 2 < len(widths):
            layers.append(nn.Tanh())
    if args.tessera_settings:
        for layer in layers:
            if isinstance(layer, nn.Linear):
                nn.init.xavier_normal_(layer.weight)
                nn.init.zeros_(layer.bias)
        layers.insert(0, Normalise())
    network = nn.Sequential(*layers).to(**options)
    model = nn.parallel.DistributedDataParallel(network)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
    schedule = (
        torch.optim.lr_scheduler.StepLR(optimizer, 1000, 0.9) if args.tessera_settings else None
    )
    generator = torch.Generator().manual_seed(args.seed + 1000 * (args.rank + 1))  # per-rank points

    def source(x):
        return 2 * math.pi**2 * torch.sin(math.pi * x[:, 0:1]) * torch.sin(math.pi * x[:, 1:2])

    def loss_of(interior, boundary):
        u = model(interior)
        grad = torch.autograd.grad(u.sum(), interior, create_graph=True)[0]
        u_xx = torch.autograd.grad(grad[:, 0].sum(), interior, create_graph=True)[0][:, 0:1]
        u_yy = torch.autograd.grad(grad[:, 1].sum(), interior, create_graph=True)[0][:, 1:2]
        residual = u_xx + u_yy + source(interior)
        return (residual**2).mean() + args.boundary_weight * (model(boundary) ** 2).mean()

    curve, reached = [], {}
    thresholds = {"1e-2": 1e-2, "1e-3": 1e-3}
    check_every = (
        args.eval_every if args.eval_every > 0 else (10 if args.time_limit is not None else 0)
    )

    def checkpoint(iteration, clock):
        """Evaluates (rank 0) and agrees on stopping; returns True to stop. Not timed."""
        clock.sync()
        paused_at = time.perf_counter()
        wall = clock.now()
        stop = 0.0
        if args.rank == 0:
            if args.eval_every > 0:
                error = relative_l2(network, options)
                curve.append([iteration, wall, error])
                for name, value in thresholds.items():
                    if name not in reached and error <= value:
                        reached[name] = wall
                if args.stop_at is not None and error <= args.stop_at:
                    stop = 1.0
            if args.time_limit is not None and wall >= args.time_limit:
                stop = 1.0
        flag = torch.tensor([stop])
        if args.world > 1:
            dist.broadcast(flag, 0)
        clock.paused += time.perf_counter() - paused_at
        return flag.item() > 0

    clock = Clock(device)
    stopped = args.eval_every > 0 and checkpoint(0, clock)
    started = None
    done = 0
    for iteration in range(args.iterations if not stopped else 0):
        if iteration == args.warmup:
            clock.sync()
            started = time.perf_counter()
            paused_at_warmup = clock.paused
        if iteration % args.resample_every == 0:
            interior = (
                torch.rand(args.points, 2, generator=generator).to(**options).requires_grad_(True)
            )
            boundary = boundary_points(args.boundary_points, generator, options)
        optimizer.zero_grad()
        loss = loss_of(interior, boundary)
        loss.backward()
        optimizer.step()
        if schedule is not None:
            schedule.step()
        done = iteration + 1
        if check_every and done % check_every == 0 and checkpoint(done, clock):
            stopped = True
            break
    clock.sync()
    timed = done - args.warmup
    ms = (
        1000.0 * (time.perf_counter() - started - (clock.paused - paused_at_warmup)) / timed
        if started is not None and timed > 0
        else float("nan")
    )
    adam_iterations = done

    lbfgs_done = 0
    if args.tessera_settings and args.lbfgs_iterations > 0 and not stopped:
        interior = (
            torch.rand(args.lbfgs_points, 2, generator=generator).to(**options).requires_grad_(True)
        )
        boundary = boundary_points(args.boundary_points, generator, options)
        lbfgs = torch.optim.LBFGS(
            model.parameters(),
            lr=1.0,
            history_size=50,
            tolerance_grad=1e-9,
            tolerance_change=1e-12,
            line_search_fn="strong_wolfe",
        )

        def closure():
            lbfgs.zero_grad()
            value = loss_of(interior, boundary)
            value.backward()  # DDP averages the gradients over the ranks
            mean = value.detach().clone()
            if args.world > 1:
                dist.all_reduce(mean)
                mean /= args.world
            return mean

        chunk_size = check_every if check_every else args.lbfgs_iterations
        while lbfgs_done < args.lbfgs_iterations:
            chunk = min(chunk_size, args.lbfgs_iterations - lbfgs_done)
            lbfgs.param_groups[0]["max_iter"] = chunk
            lbfgs.param_groups[0]["max_eval"] = chunk * 5 // 4 + 1
            before = lbfgs.state[lbfgs.param_groups[0]["params"][0]].get("n_iter", 0)
            loss = lbfgs.step(closure)
            after = lbfgs.state[lbfgs.param_groups[0]["params"][0]].get("n_iter", 0)
            lbfgs_done += after - before
            if check_every and checkpoint(adam_iterations + lbfgs_done, clock):
                stopped = True
                break
            if after == before:  # converged (gradient or change below the tolerance)
                break
    clock.sync()
    wall = clock.now()
    rel_l2 = relative_l2(network, options)
    if args.rank == 0:
        result = {
            "ms_per_iteration": ms,
            "timed_iterations": timed,
            "rel_l2": rel_l2,
            "loss": loss.item(),
            "ranks": args.world,
            "points": args.points,
            "device": args.device,
            "dtype": args.dtype,
            "torch": torch.__version__,
        }
        if args.eval_every > 0 or args.time_limit is not None or args.tessera_settings:
            result.update(
                {
                    "settings": "tessera" if args.tessera_settings else "published",
                    "adam_iterations": adam_iterations,
                    "lbfgs_iterations": lbfgs_done,
                    "wall_s": wall,
                    "stopped_early": bool(stopped),
                }
            )
        if args.eval_every > 0:
            result.update(
                {
                    "wall_to_1e-2": reached.get("1e-2"),
                    "wall_to_1e-3": reached.get("1e-3"),
                    "curve": curve,
                }
            )
        print(json.dumps(result))
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
