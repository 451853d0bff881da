#!/usr/bin/python3
"""Turns devtensor_bench_mpi's output into bench/RESULTS-mpi.md (markdown).

Input: the output of one mpirun per rank count (scripts/bench.sh: mpi-2.txt, mpi-4.txt).
Reads the lines bench/bench_mpi.cpp prints on rank 0 (everything else is ignored):
  ROW|test|ranks|size|reps=R|batch=B|impl=µs|impl=µs...   CONFIG|key=value|...
where each µs is the median over the reps of the slowest rank's time per call. Every
figure the report gives is a ratio to a peer timed in the same run (bare MPI for
all_reduce, separate calls for the bucket, the plain step for training), or the
difference of two such times. Standard library only.

Usage: /usr/bin/python3 bench/report_mpi.py [--out bench/RESULTS-mpi.md] [--elapsed "90 s"] mpi-2.txt mpi-4.txt
"""

import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from report import machine  # noqa: E402  (the same machine line as RESULTS.md)

KiB = 1024
SMALL_LIMIT = 64 * KiB  # the split: below it a per-call budget, from it a bandwidth ratio
BANDWIDTH_GOAL = 0.95   # devtensor's bus bandwidth ÷ bare MPI's, 64 KiB ... 256 MiB
EXTRA_US_GOAL = 2.0     # µs devtensor may add to a call below 64 KiB
BUCKET_GOAL = 5.0       # 100 separate all_reduces' time ÷ one fused all_reduce's


def read_run(path):
    """{(test, size): {"reps": R, "batch": B, impl: µs...}}, config, ranks"""
    rows, config, ranks = {}, {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition("|")
            parts = rest.split("|")
            if kind == "ROW" and len(parts) >= 5:
                test, ranks, size = parts[0], int(parts[1]), parts[2]
                rows[(test, size)] = {k: float(v) for k, _, v in (p.partition("=") for p in parts[3:])}
            elif kind == "CONFIG":
                config.update(p.partition("=")[::2] for p in parts)
    ranks = ranks or int(config.get("ranks", 0))
    return rows, config, ranks


def fmt_bytes(n):
    n = int(n)
    for unit, scale in (("MiB", KiB * KiB), ("KiB", KiB)):
        if n >= scale:
            return f"{n // scale} {unit}"
    return f"{n} B"


def fmt_us(us, sign=""):
    return f"{us / 1000:{sign}.3g} ms" if abs(us) >= 1000 else f"{us:{sign}.3g} µs"


def bus_gbs(size, ranks, us):
    """Bus bandwidth (NCCL's busbw): bytes × 2(n − 1)/n ÷ time, in GB/s."""
    return size * 2 * (ranks - 1) / ranks / (us * 1e3)


def all_reduce_table(rows, ranks):
    lines = ["| size | bare MPI | its bus bandwidth | devtensor | vs bare MPI | time added | "
             "bare MPI + handshake | vs bare MPI | checked = false | vs bare MPI | deterministic | vs bare MPI |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    sizes = sorted((int(s) for t, s in rows if t == "all_reduce"))
    for size in sizes:
        row = rows[("all_reduce", str(size))]
        det = rows.get(("all_reduce_deterministic", str(size)), {})
        bare = row["mpi"]
        cells = [fmt_bytes(size), fmt_us(bare), f"{bus_gbs(size, ranks, bare):.3g} GB/s"]
        for impl, source in (("devtensor", row), ("mpi_handshake", row), ("unchecked", row), ("deterministic", det)):
            if impl not in source:
                cells += ["n/a", "n/a"] + (["n/a"] if impl == "devtensor" else [])
                continue
            cells += [fmt_us(source[impl]), f"{bare / source[impl]:.2f}×"]
            if impl == "devtensor":
                cells.append(fmt_us(source[impl] - bare, "+"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def goals(runs):
    """[(label, ranks, size, measured text, met)]"""
    out = []
    for ranks, (rows, _) in sorted(runs.items()):
        shown = f"{ranks} (on {os.cpu_count()} CPUs)" if ranks > os.cpu_count() else str(ranks)
        for (test, size), row in sorted(rows.items(), key=lambda kv: (kv[0][0], int(kv[0][1]) if kv[0][1].isdigit() else 0)):
            for impl, which in (("devtensor", ""), ("unchecked", ", checked = false")):
                if test != "all_reduce" or impl not in row:
                    continue
                size_b = int(size)
                if size_b < SMALL_LIMIT:
                    extra = row[impl] - row["mpi"]
                    out.append((f"all_reduce{which} ≤ {EXTRA_US_GOAL:g} µs more a call than bare MPI (below 64 KiB)",
                                shown, fmt_bytes(size_b), f"{extra:+.2f} µs", extra <= EXTRA_US_GOAL))
                else:
                    ratio = row["mpi"] / row[impl]  # bus bandwidths' ratio: the same bytes and ranks
                    out.append((f"all_reduce{which} ≥ {BANDWIDTH_GOAL:g}× bare MPI's bus bandwidth (64 KiB – 256 MiB)",
                                shown, fmt_bytes(size_b), f"{ratio:.3f}×", ratio >= BANDWIDTH_GOAL))
            if test == "bucket" and "fused" in row:
                ratio = row["separate"] / row["fused"]
                out.append((f"one fused all_reduce ≥ {BUCKET_GOAL:g}× faster than 100 separate", shown,
                            size.replace("x", " × ") + " floats", f"{ratio:.2f}×", ratio >= BUCKET_GOAL))
    return sorted(out, key=lambda g: g[0])  # stable: by rank count, then size, within a goal


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="devtensor_bench_mpi's output, one file per rank count")
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS-mpi.md"))
    parser.add_argument("--elapsed", help="how long the MPI step of the script took, for the header")
    args = parser.parse_args()

    runs = {}
    for path in args.runs:
        rows, config, ranks = read_run(path)
        if ranks:
            runs[ranks] = (rows, config)
        else:
            print(f"{path}: no ROW line (did the run fail?)", file=sys.stderr)
    if not runs:
        sys.exit("no results to report")
    config = next(iter(runs.values()))[1]
    cpus = os.cpu_count()
    gs = goals(runs)
    met = sum(1 for g in gs if g[4])

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# devtensor MPI benchmarks", "",
        "Written by `scripts/bench.sh` (bench/report_mpi.py) from `devtensor_bench_mpi` under mpirun; "
        "do not edit by hand.", "",
        f"- date: {now}" + (f"; the MPI step took {args.elapsed}" if args.elapsed else ""),
        f"- machine: {machine()}",
        f"- MPI: {config.get('mpi', '?')}; compiler: {config.get('compiler', '?')}, Release (-O3)",
        "- ranks: " + "; ".join(
            f"{r} (`mpirun --oversubscribe -np {r}`, one thread each"
            + (f", more ranks than the {cpus} CPUs: they take turns on the cores" if r > cpus else "")
            + f"; the run took {c.get('seconds', '?')} s)" for r, (_, c) in sorted(runs.items())),
        "",
        "Each time is the median over the reps of the slowest rank's time per call; a rep is a "
        "barrier and then back-to-back calls (as many as make about 1 ms). The implementations of a "
        "row run interleaved, in a shuffled order each rep. \"vs bare MPI\" is the implementation's "
        "bus bandwidth ÷ bare MPI's (the same bytes: bare MPI's time ÷ its time); the bucket's "
        "speed-up is the separate calls' time ÷ the fused call's; ≥ the goal is met.", "",
        f"## Goals ({met} of {len(gs)} met)", "",
        "| goal | ranks | size | measured | status |", "|---|---|---|---|---|",
        *(f"| {label} | {ranks} | {size} | {text} | {'met' if ok else '**NOT met**'} |"
          for label, ranks, size, text, ok in gs),
        "",
        "## all_reduce (float, sum, in place)", "",
        "bare MPI: `MPI_Allreduce(MPI_IN_PLACE, ...)` on the same tensor's bytes. devtensor: "
        "`communicator::all_reduce(t, reduce_op::sum)`, which first checks the call with the ranks "
        "(a 64-byte `MPI_Iallreduce` polled with `MPI_Test`), then calls the same `MPI_Allreduce`. "
        "bare MPI + handshake: that check written out beside the bare call, the floor of this design. "
        "checked = false: the communicator without the check (`options{.checked = false}`: no "
        "dist_timeout or mismatch errors, as bare MPI). "
        "deterministic: `options{.deterministic = true}` (`MPI_Alltoall`, a sum in rank order, "
        "`MPI_Allgather`), for information; it runs apart from the other three, because the buffers "
        "it allocates and frees in each call slow the call after it. Bus bandwidth = bytes × 2(n − 1)/n "
        "÷ time.", "",
    ]
    for ranks, (rows, _) in sorted(runs.items()):
        lines += [f"### {ranks} ranks", "", *all_reduce_table(rows, ranks), ""]

    lines += ["## A bucket of gradients: one fused all_reduce against 100", "",
              "100 tensors of 256 floats averaged (`reduce_op::avg`): 100 `all_reduce` calls, or, as "
              "`nn::distributed_data_parallel` does, one `all_reduce` of their `cat` with the slices "
              "copied back (the cat and the copies are timed).", "",
              "| ranks | 100 separate calls | one fused | speed-up |", "|---|---|---|---|"]
    for ranks, (rows, _) in sorted(runs.items()):
        for (test, _), row in rows.items():
            if test == "bucket":
                lines.append(f"| {ranks} | {fmt_us(row['separate'])} | {fmt_us(row['fused'])} | "
                             f"{row['separate'] / row['fused']:.2f}× |")
    lines += ["", "## Data-parallel training step", "",
              "The digits MLP (64 → 128 → ReLU → 10, float) on batch 64 a rank: forward, cross_entropy, "
              "zero_grad, backward, SGD's step. plain: the module alone (no communication); DDP: the "
              "same module in `nn::distributed_data_parallel` (its gradients averaged over the ranks "
              "in one bucket during backward). Every rank runs both. For information (no goal).", "",
              "| ranks | plain step | DDP step | overhead | DDP ÷ plain |", "|---|---|---|---|---|"]
    for ranks, (rows, _) in sorted(runs.items()):
        for (test, _), row in rows.items():
            if test == "train":
                lines.append(f"| {ranks} | {fmt_us(row['plain'])} | {fmt_us(row['ddp'])} | "
                             f"{row['ddp'] - row['plain']:+.1f} µs | {row['ddp'] / row['plain']:.2f}× |")

    with open(args.out, "w", encoding="utf-8") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    print(f"wrote {args.out}: {met} of {len(gs)} goals met")


if __name__ == "__main__":
    main()
