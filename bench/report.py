#!/usr/bin/python3
"""Turns devtensor_bench's results into bench/RESULTS.md and bench/results.png.

Input: one Catch2 v2 XML file per thread count (bench-<threads>.xml), each with
two side files written by the same run: info-<threads>.txt (the configuration)
and samples-<threads>.tsv (median and minimum per benchmark). A benchmark's name
is op|size|implementation|unit=work (see bench/bench_cpu.cpp). Times are the
median of the samples, or Catch2's mean where the samples file is missing.

Usage: /usr/bin/python3 bench/report.py [--out-dir bench] results/bench-1.xml results/bench-2.xml
"""

import argparse
import csv
import datetime
import os
import platform
import re
import subprocess
import xml.etree.ElementTree as ET
from collections import defaultdict

# What each implementation is to devtensor; anything not listed is a peer.
CEILINGS = {"plain_loop", "nontemporal", "std_fill", "same_shape", "fma_peak", "memcpy"}
DEVTENSOR = "devtensor"
UNITS = {"bytes": "GB/s", "flops": "GFLOP/s", "numbers": "G numbers/s", "steps": "steps/s"}
# Work per ns times this is the unit's figure (GB/s, GFLOP/s, ... are work per ns already).
UNIT_SCALES = {"steps": 1e9}

OP_TITLES = {
    "add": "add, same shape: c = a + b (GB/s counts a and b read, c written)",
    "add_bias": "add, broadcast bias: y [N, 1024] = x [N, 1024] + bias [1024]",
    "ones": "ones into a fresh tensor each iteration (allocate, fill, drop)",
    "zeros": "zeros into a fresh tensor each iteration (allocate, fill, drop)",
    "full": "full(0.5) into a fresh tensor each iteration (allocate, fill, drop)",
    "rand": "rand: uniform floats in [0, 1)",
    "matmul": "matmul, M = N = K; then the skinny and large-k shapes, m x k x n",
    "linear": "linear: x [batch, in] · weightᵀ + bias; b1024:1024->1024 is linear(1024 → 1024) on batch 1024",
    "transpose": "transpose(0, 1).contiguous() of 8192² floats, beside copies of the same bytes (GB/s counts a read and b written)",
    "matmul_gemv_f32": "matmul [16, 4096] x [4096, 4096] float (GEMV order, B read by rows) beside linear of the same shape",
    "exp": "exp(x) into an existing tensor of 64M floats, x in [-10, 10), ONE thread (torch: exp_out); "
           "log: x in [0.01, 10); tanh, sigmoid likewise",
    "matmul_f64": "matmul, M = N = K, double (oneDNN 2.6 has no dgemm: OpenBLAS's cblas_dgemm and BLIS's bli_dgemm)",
    "matmul_gemv_f64": "matmul [4, 4096] x [4096, 4096] double (GEMV order, B read by rows) beside linear of the same shape",
    "add_every_other_column": "add of every other column of two [4096, 8192] matrices (stride 2) beside the contiguous add of as many elements",
    "add_narrowed_rows": "add of half of each row of two [4096, 8192] matrices (rows with gaps) beside the contiguous add",
    "add_transposed": "add of two transposed [4096, 4096] matrices (the tiled gather) beside the contiguous add",
    "train_linear": "training step of linear(1 → 1) on batch 64: forward, mse_loss, zero_grad, backward, SGD's step "
                    "(lr 1e-4), a fresh graph each step, 256 steps back to back a timed call",
    "train_mlp_ce": "training step of the digits MLP (64 → 128 → ReLU → 10) on batch 64: forward, cross_entropy "
                    "over int64 labels, zero_grad, backward, SGD's step, 16 steps back to back a timed call",
    "train_mlp_mse": "training step of an MLP 1024 → 4096 → ReLU → 1024 on batch 256: forward, mse_loss, zero_grad, "
                     "backward, SGD's step",
}
ROLE_NOTES = {
    "devtensor_inplace": "devtensor in place (fill / fill_uniform), no allocation",
    "same_shape": "devtensor's same-shape add on as many elements, the reference (its GB/s count 12 bytes an element)",
    "plain_loop": "c[i] = a[i] + b[i]",
    "nontemporal": "the same loop with streaming stores as wide as the CPU has (_mm512/_mm256/_mm_stream_ps); transpose: a copy through _mm_stream_ps",
    "std_fill": "std::fill into a preallocated buffer",
    "kernel": "transpose: the blocked kernel alone, into a preallocated tensor",
    "read": "reduction rows: the same bytes summed by four SSE accumulators a thread (order not kept), the read ceiling",
    "sum_rows": "sum over the last dim of [16384, 1024] floats (likewise amax_rows, argmax_rows, softmax_rows)",
    "gemm_2d": "bmm row: the 2-D GEMM of the same FLOPs, [16384, 256]·[256, 256], the reference",
    "bmm": "matmul of two [64, 256, 256] tensors (batched)",
    "contiguous": "strided add rows: the same add on contiguous [4096, 4096] operands, the reference",
    "memcpy": "memcpy of the same bytes, one chunk per thread",
    "fma_peak": "the FMA loop's GFLOP/s (all threads), run right beside the GEMMs",
    "openblas": "cblas_sgemm (linear: B transposed, y starts as the bias, beta = 1; bmm: one call per matrix; "
                "double: cblas_dgemm)",
    "openblas_sgemv": "cblas_sgemv (y starts as the bias, beta = 1)",
    "onednn": "oneDNN's dnnl_sgemm (its JIT f32 GEMM), matmul only (bmm: one call per matrix)",
    "blis": "BLIS's bli_sgemm (libblis.so.4 opened at run time), matmul only (bmm: one call per matrix; "
            "double: bli_dgemm)",
    "random123": "Random123 philox4x32-10 in a scalar loop",
    "torch": "libtorch (add_out, ones/zeros/full, rand, mm, nn::Linear under NoGradGuard, "
             "exp_out / log_out / tanh_out / sigmoid_out; training steps: nn::Linear or nn::Sequential, "
             "mse_loss / functional::cross_entropy, optim::SGD, gradients set to none as devtensor's zero_grad does)",
}

GEMM_SQUARE = ["256", "512", "1024", "2048", "4096"]
GEMM_PEERS = ("openblas", "onednn", "blis")  # "best_peer": the fastest of these in the same run
LINEAR_SQUARE = ["b256:256->256", "b1024:1024->1024", "b2048:2048->2048"]
GEMV = [f"b{b}:{n}->{n}" for n in (1024, 4096) for b in (1, 2, 4, 8, 16)]
SKINNY = ["512x4096x512", "64x65536x64", "4096x64x4096"]  # m x k x n

# The table: (label, op, sizes, reference, minimum ratio of devtensor's throughput
# [, thread counts the goal is set for: every run's where absent]).
# reference: "ceiling" (the fastest ceiling of the row), "openblas_best" (the faster
# of sgemm and sgemv), "best_peer" (the fastest of GEMM_PEERS) or an implementation's name.
GOALS = [
    ("add ≥ 0.9× ceiling", "add", ["16M", "64M"], "ceiling", 0.9),
    ("add ≥ 1.2× torch _out", "add", ["16M", "64M"], "torch", 1.2),
    ("bias add ≥ 0.9× same-shape add", "add_bias", ["16M", "64M"], "same_shape", 0.9),
] + [
    goal
    for op in ("ones", "zeros", "full")
    for goal in ((f"{op} ≥ 0.8× in-place ceiling", op, ["64M"], "ceiling", 0.8),
                 (f"{op} ≥ 5× torch", op, ["64M"], "torch", 5.0))
] + [
    ("rand ≥ 3× Random123", "rand", ["64M"], "random123", 3.0),
    ("rand ≥ 10× torch", "rand", ["64M"], "torch", 10.0),
] + [
    goal
    for op, sizes, large in (("matmul", GEMM_SQUARE, GEMM_SQUARE[2:]), ("linear", LINEAR_SQUARE, LINEAR_SQUARE[1:]))
    for goal in ((f"{op} ≥ 1.0× OpenBLAS", op, sizes, "openblas", 1.0),
                 (f"{op} ≥ 1.0× torch", op, sizes, "torch", 1.0),
                 (f"{op} ≥ 0.75× FMA peak (1024+)", op, large, "ceiling", 0.75))
] + [
    ("matmul ≥ 0.9× best peer (OpenBLAS, oneDNN, BLIS)", "matmul", GEMM_SQUARE[:1], "best_peer", 0.9),
    ("matmul ≥ 1.0× best peer (OpenBLAS, oneDNN, BLIS)", "matmul", GEMM_SQUARE[1:], "best_peer", 1.0),
    ("matmul ≥ 0.92× FMA peak (1024+)", "matmul", GEMM_SQUARE[2:], "ceiling", 0.92),
    ("matmul skinny / large-k ≥ 0.9× best peer", "matmul", SKINNY, "best_peer", 0.9),
    ("double matmul ≥ 0.9× best peer (OpenBLAS, BLIS)", "matmul_f64", GEMM_SQUARE[:1], "best_peer", 0.9),
    ("double matmul ≥ 1.0× best peer (OpenBLAS, BLIS)", "matmul_f64", GEMM_SQUARE[1:4], "best_peer", 1.0),
] + [
    ("linear GEMV shape ≥ 1.0× OpenBLAS (sgemv or sgemm)", "linear", GEMV, "openblas_best", 1.0),
    ("transpose ≥ 0.7× copy ceiling", "transpose", ["8192x8192"], "ceiling", 0.7),
] + [
    (f"add on {layout} operands ≥ 0.5× contiguous", f"add_{layout}", ["4096x4096"], "contiguous", 0.5)
    for layout in ("every_other_column", "narrowed_rows", "transposed")
] + [
    goal
    for op in ("sum", "amax", "argmax", "softmax")
    for goal in ((f"{op} over the last dim ≥ 0.9× read ceiling", f"{op}_rows", ["16384x1024"], "read", 0.9),
                 (f"{op} over the last dim ≥ 1.0× torch", f"{op}_rows", ["16384x1024"], "torch", 1.0))
] + [
    goal
    for op in ("sub", "mul", "div", "lt")
    for goal in ((f"{op} ≥ 0.9× ceiling", op, ["16M", "64M"], "ceiling", 0.9),
                 (f"{op} ≥ 1.2× torch _out", op, ["16M", "64M"], "torch", 1.2))
] + [
    ("batched matmul ≥ 0.9× the 2-D GEMM", "bmm", ["64x256x256"], "gemm_2d", 0.9),
    ("batched matmul ≥ 1.0× best peer looping over the batch", "bmm", ["64x256x256"], "best_peer", 1.0),
] + [
    (f"{op} ≥ 1.0× libtorch _out (1 thread)", op, ["64M"], "torch", 1.0)
    for op in ("exp", "log", "tanh", "sigmoid")
] + [
    ("tiny training step ≥ 20× torch (1 thread)", "train_linear", ["b64:1->1"], "torch", 20.0, [1]),
    ("digits MLP training step ≥ 2× torch", "train_mlp_ce", ["b64:64->128->10"], "torch", 2.0),
    ("big MLP training step ≥ 1.0× torch", "train_mlp_mse", ["b256:1024->4096->1024"], "torch", 1.0),
]


# ---- reading ------------------------------------------------------------------------------

def side_file(xml_path, stem, ext):
    """bench-2.xml -> info-2.txt etc., in the same folder."""
    base = os.path.basename(xml_path)
    m = re.match(r"bench-(.+)\.xml$", base)
    return os.path.join(os.path.dirname(xml_path), f"{stem}-{m.group(1)}.{ext}") if m else None


def read_info(path):
    info = {}
    if path and os.path.exists(path):
        with open(path) as f:
            for line in f:
                key, _, value = line.partition(":")
                info[key.strip()] = value.strip()
    return info


def read_medians(path):
    if not path or not os.path.exists(path):
        return {}
    with open(path) as f:
        return {row["name"]: float(row["median_ns"]) for row in csv.DictReader(f, delimiter="\t")}


def read_run(xml_path):
    """Results of one run: {(op, size): {impl: (ns, unit, work)}}, threads, info."""
    info = read_info(side_file(xml_path, "info", "txt"))
    medians = read_medians(side_file(xml_path, "samples", "tsv"))
    rows = defaultdict(dict)
    for bench in ET.parse(xml_path).getroot().iter("BenchmarkResults"):
        name = bench.get("name")
        mean = bench.find("mean")
        parts = name.split("|")
        if mean is None or len(parts) != 4:
            continue  # a benchmark that failed, or not one of ours
        op, size, impl, work = parts
        unit, _, amount = work.partition("=")
        ns = medians.get(name, float(mean.get("value")))
        rows[(op, size)][impl] = (ns, unit, float(amount))
    threads = int(info.get("threads") or re.sub(r"\D", "", os.path.basename(xml_path)) or 1)
    return rows, threads, info


# ---- arithmetic ---------------------------------------------------------------------------

def rate(entry):
    """Work per second in the report's unit (GB/s, GFLOP/s, G numbers/s, steps/s)."""
    ns, unit, amount = entry
    return amount / ns * UNIT_SCALES.get(unit, 1)


def reference_rate(results, op, size, threads, reference):
    """Throughput devtensor is divided by, and what it is called; (None, None) where missing."""
    row = results.get((op, size, threads), {})
    if reference == "ceiling":  # GEMM rows: fma_peak, measured beside them
        found = [(rate(v), i) for i, v in row.items() if i in CEILINGS]
        return max(found) if found else (None, None)
    if reference == "openblas_best":
        found = [(rate(v), i) for i, v in row.items() if i.startswith("openblas")]
        return max(found) if found else (None, None)
    if reference == "best_peer":
        found = [(rate(v), i) for i, v in row.items() if i in GEMM_PEERS]
        return (max(found)[0], f"best peer: {max(found)[1]}") if found else (None, None)
    return (rate(row[reference]), reference) if reference in row else (None, None)


def fmt_time(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("µs", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def fmt_ratio(x):
    return "n/a" if x is None else f"{x:.2f}×"


# ---- the machine --------------------------------------------------------------------------

def machine():
    def first(path, key):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(key):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return "?"

    caches = ""
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        caches = ", ".join(f"{k} {v}" for k, v in re.findall(r"^(L1d|L2|L3) cache:\s+(.*)$", out, re.M))
    except OSError:
        pass
    mem_kb = first("/proc/meminfo", "MemTotal").split()[0]
    flags = first("/proc/cpuinfo", "flags").split()
    isa = " ".join(f for f in ("avx2", "fma", "avx512f", "amx_tile") if f in flags)
    return (f"{first('/proc/cpuinfo', 'model name')}, {os.cpu_count()} logical CPUs, "
            f"{int(mem_kb) / 2**20:.0f} GiB memory; {isa}; {caches}; Linux {platform.release()}")


# ---- writing ------------------------------------------------------------------------------

def op_tables(results, ops_in_order):
    lines = []
    for op in ops_in_order:
        keys = [k for k in results if k[0] == op]
        unit = UNITS[next(iter(results[keys[0]].values()))[1]]
        present = dict.fromkeys(i for k in keys for i in results[k])
        notes = [f"{i}: {ROLE_NOTES[i]}" for i in present if i in ROLE_NOTES]
        lines += [f"### {OP_TITLES.get(op, op)}", ""]
        lines += ["Where: " + "; ".join(notes) + ".", ""] if notes else []
        per = " a step" if unit == UNITS["steps"] else ""  # a call may run several steps
        lines += [f"| size | threads | implementation | time{per} | {unit} | devtensor ÷ it |",
                  "|---|---|---|---|---|---|"]
        for key in keys:
            _, size, threads = key
            row = results[key]
            mine = rate(row[DEVTENSOR]) if DEVTENSOR in row else None
            for impl in sorted(row, key=lambda i: (i != DEVTENSOR, i not in CEILINGS, i)):
                r = rate(row[impl])
                name = f"**{impl}**" if impl == DEVTENSOR else impl + (" (ceiling)" if impl in CEILINGS else "")
                ratio = "—" if impl == DEVTENSOR or mine is None else fmt_ratio(mine / r)
                ns, impl_unit, amount = row[impl]
                shown = ns / amount if impl_unit == "steps" else ns
                lines.append(f"| {size} | {threads} | {name} | {fmt_time(shown)} | {r:.3g} | {ratio} |")
        lines.append("")
    return lines


def evaluate_goals(results, thread_counts):
    """[(label, op, size, threads, reference name, ratio or None, minimum)]"""
    rows = []
    for label, op, sizes, reference, minimum, *only in GOALS:
        for threads in thread_counts:
            if only and threads not in only[0]:
                continue
            for size in sizes:
                row = results.get((op, size, threads), {})
                ref, ref_name = reference_rate(results, op, size, threads, reference)
                ratio = rate(row[DEVTENSOR]) / ref if ref and DEVTENSOR in row else None
                if not row:
                    continue  # not run (a filtered run): leave the goal out
                rows.append((label, op, size, threads, ref_name or reference, ratio, minimum))
    return rows


# What limits a goal of the GEMM issue (18) that a run does not meet, as measured on the
# machine the kernels were tuned on (Zen 4 with AVX-512, 2 vCPUs): printed under the goals
# table for each label with a row not met. Profiles and harness runs, not this run's figures.
LIMITS = {
    "matmul ≥ 1.0× best peer (OpenBLAS, oneDNN, BLIS)":
        "oneDNN 2.6.3's AVX-512 JIT runs at 0.92-0.98× the FMA-peak loop at 512-4096 here, so 1.0× "
        "asks devtensor for the same. perf, one thread: the plain micro-kernel runs at the loop's "
        "rate; what is left is packing on the way: the tiles that pack B's panels as they read B "
        "(512³: 2-3× a plain tile's time, B's rows from L3) and A's (1024³: 1.75×, A's rows 4 KiB "
        "apart share an L1 set), and above L2 B's pass (1-2%). The gap (0-5% over the last three "
        "full runs) is about how far one square row moves between full runs on this shared VM "
        "(512³ on one thread: 0.99×, 1.02× and 0.95× at 19:36, 19:56 and 20:52 UTC).",
    "matmul ≥ 0.92× FMA peak (1024+)":
        "the same packing as above; oneDNN reaches 0.94-0.95× at 1024³.",
    "double matmul ≥ 1.0× best peer (OpenBLAS, BLIS)":
        "OpenBLAS's dgemm runs at 0.90-0.92× the double FMA peak at 1024-2048 here; devtensor's "
        "14 × 16 kernel at 36-53 GFLOP/s at 2048 in harness runs minutes apart (0.61-0.91× that peak; "
        "the peers 48-54). Its 140 × 768 block of A (860 KB) fills most of the 1 MiB L2; blocks of 98 and 70 "
        "rows measured within that noise.",
    "linear GEMV shape ≥ 1.0× OpenBLAS (sgemv or sgemm)":
        "batch 1 reads the whole weight once a call (4 MB at 1024 → 1024, 64 MB at 4096 → 4096), "
        "from L3 or memory on both sides; the rows move by ±10-20% between full runs (1024 → 1024 "
        "on two threads: 1.19× at 16:41 UTC, 0.94× at 19:36).",
    "batched matmul ≥ 1.0× best peer looping over the batch":
        "in one process, min of 30 calls, median of 5 rounds (19:10 UTC): 0.999× oneDNN on one "
        "thread, 1.02× on two; a full run's median of 15 samples moves by several percent (the batch "
        "streams 48 MB of fresh operands through the shared L3).",
    "batched matmul ≥ 0.9× the 2-D GEMM":
        "the 2-D product of the same FLOPs reads one [256, 256] B and keeps it in cache; the batch "
        "streams 64 fresh A, B and C from memory. oneDNN looping over the batch is no faster "
        "(the row above).",
}


def limits_section(goals):
    unmet = dict.fromkeys(label for label, _, _, _, _, ratio, minimum in goals
                          if ratio is not None and ratio < minimum and label in LIMITS)
    if not unmet:
        return []
    return ["### What limits the GEMM rows not met", "",
            *(f"- **{label}**: {LIMITS[label]}" for label in unmet), ""]


def goals_table(goals):
    lines = ["| goal | size | threads | measured against | devtensor ÷ it | status |",
             "|---|---|---|---|---|---|"]
    for label, _, size, threads, ref_name, ratio, minimum in goals:
        status = "n/a" if ratio is None else "met" if ratio >= minimum else "**NOT met**"
        lines.append(f"| {label} | {size} | {threads} | {ref_name} | {fmt_ratio(ratio)} | {status} |")
    return lines


def scaling_tables(results, thread_counts):
    """Per op: time per size and its growth against the ideal and against the references
    (the ceilings / OpenBLAS, which meet the same caches): 'cliff' where devtensor grows
    more than 1.5× faster than both."""
    lines = []
    ops = list(dict.fromkeys(k[0] for k in results if k[0].startswith("scale/")))
    for op in ops:
        name = op.split("/", 1)[1]
        lines += [f"### {name}", "",
                  "| threads | size | devtensor time | rate | growth | ideal growth | reference growth | verdict |",
                  "|---|---|---|---|---|---|---|---|"]
        for threads in thread_counts:
            keys = [k for k in results if k[0] == op and k[2] == threads]
            prev = None
            for key in keys:
                row = results[key]
                if DEVTENSOR not in row:
                    continue
                ns, unit, amount = row[DEVTENSOR]
                refs = [v for i, v in row.items() if i != DEVTENSOR]
                best_ref = min(v[0] for v in refs) if refs else None
                cells = [str(threads), key[1], fmt_time(ns), f"{rate(row[DEVTENSOR]):.3g} {UNITS[unit]}"]
                if prev is None:
                    cells += ["—", "—", "—", "—"]
                else:
                    p_ns, p_amount, p_ref = prev
                    growth = ns / p_ns
                    ideal = amount / p_amount  # work grows linearly (elementwise) or cubically (GEMM)
                    ref_growth = best_ref / p_ref if best_ref and p_ref else None
                    allowed = 1.5 * max(ideal, ref_growth or 0)
                    verdict = "ok" if growth <= allowed else "**cliff**"
                    cells += [f"{growth:.3g}×", f"{ideal:.3g}×",
                              "n/a" if ref_growth is None else f"{ref_growth:.3g}×", verdict]
                prev = (ns, amount, best_ref)
                lines.append("| " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def chart(goals, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    shown = [g for g in goals if g[5] is not None]
    if not shown:  # still replace an older chart: it would not match RESULTS.md
        fig, ax = plt.subplots(figsize=(6, 1.5))
        ax.axis("off")
        ax.text(0.5, 0.5, "no goal could be measured in this run", ha="center", va="center")
        fig.savefig(path, dpi=120)
        return
    labels = [f"{label.split(' ≥')[0]} {size} vs {ref} (t={threads})"
              for label, _, size, threads, ref, _, _ in shown]
    fraction = [ratio / minimum for *_, ratio, minimum in shown]
    colours = ["#2a9d55" if f >= 1 else "#d1495b" for f in fraction]
    fig, ax = plt.subplots(figsize=(10, 0.28 * len(shown) + 1.5))
    y = range(len(shown))
    ax.barh(y, fraction, color=colours)
    ax.axvline(1.0, color="black", linestyle="--", linewidth=1, label="goal")
    for i, (*_, ratio, minimum) in enumerate(shown):
        ax.text(fraction[i], i, f" {ratio:.2f}× (goal {minimum:g}×)", va="center", fontsize=7)
    ax.set_yticks(list(y), labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(min(0.5, min(fraction) / 1.5), max(2.0, max(fraction)) * 2.5)  # room for the labels
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x:g}"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_xlabel("devtensor's ratio ÷ the goal's ratio (≥ 1 is met; log scale)")
    ax.set_title("devtensor against the issue's goals (ratios measured in the same run)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("xml", nargs="+")
    parser.add_argument("--out-dir", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--elapsed", help="how long the benchmark script took, for the header")
    args = parser.parse_args()

    results, infos = {}, {}
    for path in args.xml:
        rows, threads, info = read_run(path)
        infos[threads] = info
        for (op, size), impls in rows.items():
            results[(op, size, threads)] = impls
    thread_counts = sorted(infos)
    info = infos[thread_counts[0]]
    for peer, key in (("onednn", "ISA"), ("blis", "arch")):  # what each dispatched to, in its row notes
        if m := re.search(rf"; {key} (\w+)", info.get(peer, "")):
            ROLE_NOTES[peer] += f" ({key} {m.group(1)})"
    ops = [op for op in dict.fromkeys(k[0] for k in results) if not op.startswith("scale/")]
    goals = evaluate_goals(results, thread_counts)
    met = sum(1 for g in goals if g[5] is not None and g[5] >= g[6])
    measured = sum(1 for g in goals if g[5] is not None)

    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# devtensor CPU benchmarks", "",
        "Written by `scripts/bench.sh` (bench/report.py); do not edit by hand.", "",
        f"- date: {now}" + (f"; the script took {args.elapsed}" if args.elapsed else ""),
        f"- machine: {machine()}",
        f"- compiler: {info.get('compiler', '?')}, Release (-O3)",
        f"- OpenBLAS: {info.get('openblas', 'n/a')}",
        f"- oneDNN: {info.get('onednn', 'n/a')}",
        f"- BLIS: {info.get('blis', 'n/a')}",
        f"- libtorch: {info.get('torch', 'n/a')}",
        f"- FMA peak loop: {info.get('fma_isa', '?')}",
        f"- threads: {', '.join(map(str, thread_counts))} (each run gives devtensor, OpenBLAS, oneDNN, BLIS, "
        "torch and the ceiling loops the same count)",
        *(f"- {t}-thread run: load average (1, 5, 15 min) before / after "
          f"{infos[t].get('load average before / after', '?')}; {infos[t].get('OpenMP', '')}"
          for t in thread_counts),
        "",
        f"Every time is the median of the run's {info.get('samples', '')} samples. Ratios divide throughputs measured in the "
        "same process, one implementation right after the other; read them, not the absolute "
        "figures, on a shared machine.", "",
        f"## Goals ({met} of {measured} met)", "",
        *goals_table(goals), "",
        *limits_section(goals),
        "![ratios against the goals](results.png)", "",
        "## Results per op", "",
        *op_tables(results, ops),
        "## Scaling", "",
        "devtensor at 5 sizes per op: elementwise from 8K floats (32 KiB, L1) by 16× steps to "
        "128M floats, i.e. 512 MiB an operand, capped there rather than at 4× the L3 (this VM "
        "reports a 480 MiB L3, which is not a real cache size); GEMM at 64 to 1024. Growth is "
        "the time ratio to the previous size; the ideal is the work ratio (16× elementwise, "
        "8× GEMM). Crossing a cache level changes bandwidth, so the reference growth — the "
        "ceiling loops (OpenBLAS for GEMM) at the same sizes, which meet the same caches — says "
        "what the machine allows; a **cliff** is growth over 1.5× both the ideal and the "
        "reference's growth.", "",
        *scaling_tables(results, thread_counts),
    ]
    os.makedirs(args.out_dir, exist_ok=True)
    with open(os.path.join(args.out_dir, "RESULTS.md"), "w") as f:
        f.write("\n".join(lines).rstrip() + "\n")
    chart(goals, os.path.join(args.out_dir, "results.png"))
    print(f"wrote {args.out_dir}/RESULTS.md and results.png: {met} of {measured} goals met")


if __name__ == "__main__":
    main()
