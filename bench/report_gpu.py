#!/usr/bin/env python3
"""Turns devtensor_bench_gpu's output into bench/RESULTS-gpu.md (markdown).

Reads the lines bench/bench_gpu.cpp prints (everything else is ignored):
  ROW|op|shape|ours_ms|reference|ref_ms|ratio|goal|met|ours_rate|ref_rate|unit|note
  CHECK|op|shape|detail   FAIL|op|shape|detail   DEVICE|...   CONFIG|...
ratio is devtensor's throughput ÷ the reference's, measured in the same run;
goal 0 marks a row for information. Standard library only.

Usage: python3 bench/report_gpu.py bench.txt [--nvidia-smi smi.csv] [--bench-rc N] [--out RESULTS-gpu.md]
where smi.csv is `nvidia-smi --query-gpu=name,driver_version,... --format=csv` output.
"""

import argparse
import datetime
import re
import sys

ROW_FIELDS = ["op", "shape", "ours_ms", "reference", "ref_ms", "ratio", "goal", "met",
              "ours_rate", "ref_rate", "unit", "note"]


def read_bench(path):
    rows, checks, fails, device, config = [], [], [], None, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            kind, _, rest = line.rstrip("\n").partition("|")
            parts = rest.split("|")
            if kind == "ROW" and len(parts) == len(ROW_FIELDS):
                row = dict(zip(ROW_FIELDS, parts))
                for key in ("ours_ms", "ref_ms", "ratio", "goal", "ours_rate", "ref_rate"):
                    row[key] = float(row[key])
                rows.append(row)
            elif kind in ("CHECK", "FAIL") and len(parts) >= 3:
                (checks if kind == "CHECK" else fails).append((parts[0], parts[1], "|".join(parts[2:])))
            elif kind == "DEVICE":
                device = ", ".join(parts)
            elif kind == "CONFIG":
                config = "|".join(parts)
    return rows, checks, fails, device, config


def read_nvidia_smi(path):
    """'NVIDIA H200; driver_version 570.86; ...' from nvidia-smi's CSV (header, then one line a GPU)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [l.strip() for l in f if l.strip()]
    except OSError:
        return None
    if len(lines) < 2 or "," not in lines[0]:
        return lines[0] if lines else None  # not CSV: whatever it says first
    header = [re.sub(r"\s*\[.*\]", "", h).strip() for h in lines[0].split(",")]  # units repeat in the values
    described = []
    for line in lines[1:]:
        values = [v.strip() for v in line.split(",")]
        fields = dict(zip(header, values))
        name = fields.pop("name", "?")
        described.append("; ".join([name] + [f"{k} {v}" for k, v in fields.items()]))
    return " / ".join(described)


def fmt_ms(ms):
    return f"{ms * 1000:.3g} µs" if ms < 1 else f"{ms:.3g} ms"


def side(ms, rate, unit):
    return f"{fmt_ms(ms)}, {rate:,.1f} {unit}"


def table(rows, with_goal):
    head = "| op | shape | devtensor | reference | reference's time | ratio |"
    rule = "|---|---|---|---|---|---|"
    if with_goal:
        head += " goal | status |"
        rule += "---|---|"
    lines = [head, rule]
    for r in rows:
        cells = [r["op"], f"`{r['shape']}`", side(r["ours_ms"], r["ours_rate"], r["unit"]), r["reference"],
                 side(r["ref_ms"], r["ref_rate"], r["unit"]), f"{r['ratio']:.3f}×"]
        if with_goal:
            cells += [f"≥ {r['goal']:g}×", "met" if r["met"] == "yes" else "**NOT met**"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def report(bench_path, smi_path=None, bench_rc=None, date=None):
    rows, checks, fails, device, config = read_bench(bench_path)
    goals = [r for r in rows if r["goal"] > 0]
    info = [r for r in rows if r["goal"] <= 0]
    met = sum(1 for r in goals if r["met"] == "yes")  # the benchmark's verdict, from the unrounded ratio
    smi = read_nvidia_smi(smi_path) if smi_path else None
    date = date or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")

    lines = ["# devtensor GPU benchmarks", "",
             "Written by `scripts/gpu-check.sh` (bench/report_gpu.py) from one run of "
             "`devtensor_bench_gpu`; do not edit by hand.", "",
             f"- date: {date}",
             f"- device: {smi or device or 'unknown'}"]
    if smi and device:
        lines.append(f"- as the benchmark saw it: {device}")
    if config:
        lines.append(f"- method: {config}")
    if bench_rc is not None:
        lines.append(f"- the benchmark exited with status {bench_rc}"
                     + ("" if bench_rc == 0 else ": rows after the failure may be missing"))
    lines += ["",
              "Ratios are devtensor's throughput ÷ the reference's, both measured in this run, "
              "each counting its own work (add moves 3 arrays, a device-to-device copy 2); "
              "≥ the goal is met.", "",
              f"## Goals ({met} of {len(goals)} met)", ""]
    lines += table(goals, with_goal=True) if goals else ["No goal row was measured."]
    if info:
        lines += ["", "## For information", ""] + table(info, with_goal=False)
    notes = dict.fromkeys((r["op"], r["note"]) for r in rows if r["note"])
    if notes:
        lines += ["", "## Notes", ""] + [f"- {op}: {note}" for op, note in notes]
    lines += ["", f"## Results checked ({len(checks)} right, {len(fails)} wrong)", ""]
    lines += [f"- **wrong**: {op} `{shape}`: {detail}" for op, shape, detail in fails]
    lines += [f"- {op} `{shape}`: {detail}" for op, shape, detail in checks]
    return "\n".join(lines) + "\n", met, len(goals), len(fails)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench", help="devtensor_bench_gpu's output")
    parser.add_argument("--nvidia-smi", help="nvidia-smi --query-gpu=... --format=csv output")
    parser.add_argument("--bench-rc", type=int, help="the benchmark's exit status, for the header")
    parser.add_argument("--date", help="the header's date (default: now, UTC)")
    parser.add_argument("--out", help="where to write (default: standard output)")
    args = parser.parse_args()
    text, met, goals, fails = report(args.bench, args.nvidia_smi, args.bench_rc, args.date)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
        print(f"wrote {args.out}: {met} of {goals} goals met, {fails} wrong results", file=sys.stderr)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
