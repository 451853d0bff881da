#!/usr/bin/env python3
"""Checks devtensor's CUDA kernels without a GPU and writes bench/KERNELS.md.

1. Compiles every kernel instantiation the library ships (elementwise kernels
   for float, double, int32, int64; rand and GEMM for float and double) for
   sm_90 with `nvcc -Xptxas -v`, and records registers, shared memory, stack
   and spills per kernel. Fails when any kernel spills.
2. With --binary FILE (the CUDA test binary): its sm_90 cubins (extracted
   with `cuobjdump --extract-elf`) must hold machine code, not only PTX, for
   each of these kernels ($CUOBJDUMP names the tool where it is not on PATH).

usage: kernel-report.py [--output bench/KERNELS.md] [--binary build/tests/devtensor_tests_cuda]
"""
import argparse, datetime, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ELEMENTWISE = ["float", "double", "std::int32_t", "std::int64_t"]
FLOATING = ["float", "double"]


def instantiations():
    """Explicit instantiations of every shipped kernel, one per line."""
    ns = "devtensor::backend_cuda"
    lines = []
    for t in ELEMENTWISE:
        lines += [
            f"template __global__ void {ns}::fill_kernel<{t}>({t}*, std::int64_t, {t});",
            f"template __global__ void {ns}::add_kernel<{t}>(const {t}*, const {t}*, {t}*, std::int64_t);",
            f"template __global__ void {ns}::add_broadcast_kernel<{t}>(const {t}*, const {t}*, {t}*, "
            f"std::int64_t, devtensor::detail::broadcast_strides);",
        ]
    for t in FLOATING:
        lines += [
            f"template __global__ void {ns}::uniform_kernel<{t}>({t}*, std::int64_t, std::uint64_t, std::uint64_t);",
            f"template __global__ void {ns}::gemm_kernel<{ns}::gemm_tile_default, {t}>({ns}::gemm_params<{t}>);",
        ]
    return lines


def ptxas_report():
    source = "#include <devtensor/devtensor.hpp>\n" + "\n".join(instantiations()) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        cu = os.path.join(tmp, "kernels.cu")
        with open(cu, "w") as f:
            f.write(source)
        cmd = ["nvcc", "-std=c++20", "-O3", "-arch=sm_90", "-cubin", "-Xptxas", "-v",
               "-DDEVTENSOR_CUDA_RUNTIME=1", "-I", os.path.join(ROOT, "include"), cu,
               "-o", os.path.join(tmp, "kernels.cubin")]
        run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("nvcc failed:\n" + run.stderr)
    kernels, current = {}, None
    for line in run.stderr.splitlines():
        m = re.search(r"Compiling entry function '(\w+)' for '(sm_\d+)'", line)
        if m:
            current = demangle(m.group(1))
            kernels[current] = {"arch": m.group(2)}
            continue
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            kernels[current].update(stack=int(m.group(1)), spill_stores=int(m.group(2)), spill_loads=int(m.group(3)))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            kernels[current]["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            kernels[current]["smem"] = int(s.group(1)) if s else 0
    return kernels


def demangle(name):
    return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()


def short(name):
    """'void devtensor::backend_cuda::nvcc_tu::fill_kernel<float>(float*, ...)' -> 'fill_kernel<float>'"""
    name = re.sub(r"^void ", "", name).split("(")[0]
    return re.sub(r"devtensor::(backend_cuda::)?(nvcc_tu::)?", "", name)


def sass_kernels(binary):
    """Kernels with sm_90 machine code in `binary`: its sm_90 cubins, extracted
    with cuobjdump, and the function symbols of each (no nvdisasm needed)."""
    tool = os.environ.get("CUOBJDUMP", "cuobjdump")
    if os.sep in tool:
        tool = os.path.abspath(tool)  # it runs in a temporary folder
    found = set()
    with tempfile.TemporaryDirectory() as tmp:
        run = subprocess.run([tool, "--extract-elf", "all", os.path.abspath(binary)], cwd=tmp,
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit("cuobjdump failed:\n" + run.stderr)
        for cubin in sorted(f for f in os.listdir(tmp) if f.endswith(".sm_90.cubin")):
            symbols = subprocess.run(["readelf", "-sW", os.path.join(tmp, cubin)], capture_output=True,
                                     text=True).stdout
            for line in symbols.splitlines():
                if " FUNC " in line and line.split()[-1].startswith("_Z"):
                    found.add(short(demangle(line.split()[-1])))
    return found


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--output", default=os.path.join(ROOT, "bench", "KERNELS.md"))
    parser.add_argument("--binary")
    args = parser.parse_args()

    kernels = ptxas_report()
    expected = len(instantiations())
    problems = []
    if len(kernels) != expected:
        problems.append(f"ptxas reported {len(kernels)} kernels, expected {expected}")
    rows = []
    for name in sorted(kernels, key=short):
        k = kernels[name]
        if k.get("spill_stores", 0) or k.get("spill_loads", 0):
            problems.append(f"{short(name)} spills")
        rows.append(f"| `{short(name)}` | {k['arch']} | {k.get('registers', '?')} | {k.get('smem', 0)} | "
                    f"{k.get('stack', '?')} | {k.get('spill_stores', '?')} | {k.get('spill_loads', '?')} |")
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with open(args.output, "w") as f:
        f.write("# devtensor's CUDA kernels as ptxas sees them\n\n"
                "Written by `scripts/kernel-report.py` (run by `scripts/test.sh`); do not edit by hand.\n\n"
                f"- date: {datetime.date.today()}; {nvcc}; `-O3 -arch=sm_90`\n"
                "- every instantiation the library ships: elementwise kernels for float, double, int32, int64;"
                " rand and GEMM for float and double\n\n"
                "| kernel | arch | registers | shared memory (bytes) | stack (bytes) | spill stores | spill loads |\n"
                "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    print(f"ptxas: {len(kernels)} kernels for sm_90, "
          f"{sum(1 for k in kernels.values() if k.get('spill_stores') or k.get('spill_loads'))} spilling; "
          f"table in {os.path.relpath(args.output, ROOT)}")

    if args.binary:
        in_binary = sass_kernels(args.binary)
        missing = sorted({short(n) for n in kernels} - in_binary)
        if missing:
            problems.append("no sm_90 SASS in " + args.binary + " for: " + ", ".join(missing[:8]))
        print(f"cuobjdump: {len(in_binary)} kernels with sm_90 SASS in {os.path.basename(args.binary)}")
    if problems:
        sys.exit("kernel check FAILED: " + "; ".join(problems))


if __name__ == "__main__":
    main()
