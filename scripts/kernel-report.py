#!/usr/bin/env python3
"""Checks devtensor's CUDA kernels without a GPU and writes bench/KERNELS.md.

0. Checks that include/devtensor/backend/cuda/kernel_registry.hpp, the list of
   kernels this script reads, names every __global__ of kernels.cuh and no other
   (--check-registry: only this, without nvcc; CTest runs it).
1. Compiles every kernel instantiation the registry lists (elementwise kernels
   for float, double, int32, int64, each with a 32- and a 64-bit index; rand,
   the GEMM tiles and the small-batch GEMV for float and double) for sm_90
   with `nvcc -Xptxas -v`, and records registers, shared memory, stack and
   spills per kernel. Fails when any kernel spills or uses stack.
2. Compiles them to PTX and fails when a kernel lacks what makes it fast
   (PTX_FEATURES: 16-byte accesses, cp.async, shuffles, the transpose's shared tile).
3. Checks the floating-point contractions in the PTX (DESIGN §15), kernel by kernel:
   a. nvcc contracted nothing: each kernel's `fma.rn` count is the same compiled
      with nvcc's default --fmad=true as with --fmad=false, so every fma is one the
      source asks for (detail::fma, which the CPU makes too);
   b. ptxas can contract nothing: no kernel holds both a multiply and an add (or
      sub) of one float type without a rounding modifier (`mul.f32` + `add.f32`:
      the pair the code generator may fuse); detail::mul/add emit `.rn`;
   c. only the GEMM and GEMV kernels (FMA_KERNELS) hold fma at all, and they do
      (their order is fma chains): an elementwise or rand kernel with an fma
      rounds differently from the CPU.
   What this does not prove: that the CPU makes the same fmas (the tests compare
   bits for that: tests/test_determinism.cpp), nor anything about SASS beyond what
   ptxas may legally do with the PTX.
4. With --binary FILE (the CUDA test binary): its sm_90 cubins (extracted
   with `cuobjdump --extract-elf`) must hold machine code, not only PTX, for
   each of these kernels ($CUOBJDUMP names the tool where it is not on PATH).

usage: kernel-report.py [--output bench/KERNELS.md] [--binary build/tests/devtensor_tests_cuda] [--check-registry]
"""
import argparse, datetime, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY = os.path.join(ROOT, "include", "devtensor", "backend", "cuda", "kernel_registry.hpp")
KERNELS_CUH = os.path.join(ROOT, "include", "devtensor", "backend", "cuda", "kernels.cuh")
INDEX = ["std::int32_t", "std::int64_t"]


def registry():
    """The lines of DEVTENSOR_CUDA_KERNELS: (kernel, [element types], template arguments, emulator test)."""
    text = open(REGISTRY).read().replace("\\\n", " ")
    lines = re.findall(r'\bX\((\w+),\s*"([^"]*)",\s*"([^"]*)",\s*"([^"]*)"\)', text)
    if not lines:
        sys.exit(f"no X(...) lines in {REGISTRY}")
    return [(name, types.split(), arguments, test) for name, types, arguments, test in lines]


def registry_problems():
    """Kernels defined in kernels.cuh but not in the registry, or the other way round."""
    defined = set(re.findall(r"DEVTENSOR_KERNEL\s+void\s+(?:DEVTENSOR_LAUNCH_BOUNDS\([^)]*\)\s*)?(\w+)\s*\(",
                             open(KERNELS_CUH).read()))
    named = {name for name, _, _, _ in registry()}
    problems = [f"kernels.cuh defines __global__ {k}, which kernel_registry.hpp does not name" for k in sorted(defined - named)]
    problems += [f"kernel_registry.hpp names {k}, which kernels.cuh does not define" for k in sorted(named - defined)]
    return problems


def instantiations():
    """Every registered kernel instantiation, as `kernel<arguments>` relative to devtensor::backend_cuda:
    T replaced by each element type of its line, I (where present) by each index type."""
    out = []
    for name, types, arguments, _ in registry():
        for t in types:
            args = re.sub(r"\bT\b", t, arguments)
            indexed = re.search(r"\bI\b", args)
            out += [name + re.sub(r"\bI\b", i, args) for i in (INDEX if indexed else ["I"])]
    return out


# What the PTX of each kernel must contain (kernel name prefix -> [(what, regex)]).
WIDE = r"\.(v4\.[bufs]32|v2\.[bufs]64)\b"  # one 16-byte access
PTX_FEATURES = {
    "fill_kernel": [("16-byte stores", r"\bst(\.global)?" + WIDE)],
    "map_linear_kernel": [("16-byte loads", r"\bld\.global(\.nc)?" + WIDE), ("16-byte stores", r"\bst(\.global)?" + WIDE)],
    "map_repeat_kernel": [("16-byte loads", r"\bld\.global(\.nc)?" + WIDE), ("16-byte stores", r"\bst(\.global)?" + WIDE)],
    "uniform_kernel": [("16-byte stores", r"\bst(\.global)?" + WIDE)],
    "gemm_kernel": [("cp.async", r"\bcp\.async\.c[ag]\.shared\.global"), ("cp.async waits", r"\bcp\.async\.wait_group"),
                    ("16-byte shared loads", r"\bld\.shared" + WIDE)],
    "gemv_kernel": [("16-byte loads", r"\bld\.global(\.nc)?" + WIDE), ("warp shuffles", r"\bshfl\.sync")],
    "transpose_kernel": [("a shared-memory tile", r"\bst\.shared\."), ("a barrier", r"\b(bar|barrier)\.sync\b")],
}


def compile_kernels(tmp, *flags):
    """nvcc over every instantiation; returns (stderr, output path)."""
    # Taking each kernel's address instantiates it (no parameter lists to spell out).
    source = ("#include <devtensor/devtensor.hpp>\nnamespace devtensor::backend_cuda {\n"
              "const void* const registered_kernels[] = {\n" +
              "".join(f"    (const void*)&{k},\n" for k in instantiations()) + "};\n}\n")
    cu = os.path.join(tmp, "kernels.cu")
    with open(cu, "w") as f:
        f.write(source)
    output = os.path.join(tmp, "kernels.out")
    cmd = ["nvcc", "-std=c++20", "-O3", "-arch=sm_90", *flags, "-DDEVTENSOR_CUDA_RUNTIME=1",
           "-I", os.path.join(ROOT, "include"), cu, "-o", output]
    run = subprocess.run(cmd, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit("nvcc failed:\n" + run.stderr)
    return run.stderr, output


def ptx_kernels(*flags):
    """{short kernel name: its PTX body} for every instantiation, compiled with `flags`."""
    with tempfile.TemporaryDirectory() as tmp:
        _, output = compile_kernels(tmp, "-ptx", *flags)
        ptx = open(output).read()
    entries = list(re.finditer(r"\.entry (\w+)\(", ptx))
    return {short(demangle(entry.group(1))): ptx[entry.end():entries[n + 1].start() if n + 1 < len(entries) else len(ptx)]
            for n, entry in enumerate(entries)}


def ptx_problems(kernels):
    """Kernels whose PTX lacks what PTX_FEATURES asks of them."""
    problems, checked = [], 0
    for name, body in kernels.items():
        for prefix, features in PTX_FEATURES.items():
            if name.startswith(prefix + "<"):
                checked += 1
                problems += [f"{name} has no {what}" for what, pattern in features if not re.search(pattern, body)]
    return problems, checked


# The kernels whose order is fma chains (detail/gemm_order.hpp); no other kernel may hold an fma.
# normal_kernel: randn's log, sin and cos (detail/math.hpp) are written with detail::fma,
# which the CPU makes too (std::fma).
FMA_KERNELS = ("gemm_kernel<", "gemv_kernel<", "normal_kernel<")
FMA = r"\bfma\.rn(\.ftz)?(\.sat)?\.f(32|64)\b"


def unrounded(op, width):
    """A float `op` without a rounding modifier: what ptxas may fuse (mul.f32, add.ftz.f32, ...)."""
    return rf"\b{op}(\.ftz)?(\.sat)?\.f{width}\b"


def contraction_problems(default, no_fmad):
    """DESIGN §15's contraction checks (a, b, c in the docstring) over {kernel: PTX} compiled
    with nvcc's default --fmad=true and with --fmad=false."""
    problems = []
    for name, body in default.items():
        fmas = len(re.findall(FMA, body))
        if name in no_fmad and fmas != len(re.findall(FMA, no_fmad[name])):
            problems.append(f"{name}: nvcc contracted {fmas - len(re.findall(FMA, no_fmad[name]))} "
                            "multiply-adds into fma (use detail::fma / mul / add)")
        for width in ("32", "64"):
            if re.search(unrounded("mul", width), body) and (re.search(unrounded("add", width), body) or
                                                              re.search(unrounded("sub", width), body)):
                problems.append(f"{name}: mul.f{width} and add/sub.f{width} without .rn, which ptxas may fuse")
        wants_fma = name.startswith(FMA_KERNELS)
        if wants_fma and fmas == 0:
            problems.append(f"{name} has no fma.rn: its order is fma chains")
        if not wants_fma and fmas:
            problems.append(f"{name} holds {fmas} fma.rn, which the CPU does not make")
    missing = sorted(set(default) - set(no_fmad))
    if missing:
        problems.append("not compiled with --fmad=false: " + ", ".join(missing[:4]))
    return problems


def ptxas_report():
    with tempfile.TemporaryDirectory() as tmp:
        stderr, _ = compile_kernels(tmp, "-cubin", "-Xptxas", "-v")
    kernels, current = {}, None
    for line in stderr.splitlines():
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
    parser.add_argument("--check-registry", action="store_true",
                        help="only check that kernel_registry.hpp names every __global__ of kernels.cuh (no nvcc)")
    args = parser.parse_args()
    problems = registry_problems()
    if args.check_registry or problems:
        print(f"registry: {len(registry())} lines, {len(instantiations())} instantiations, {len(problems)} problems")
        if problems:
            sys.exit("kernel check FAILED: " + "; ".join(problems))
        return

    kernels = ptxas_report()
    expected = len(instantiations())
    if len(kernels) != expected:
        problems.append(f"ptxas reported {len(kernels)} kernels, expected {expected}")
    rows = []
    for name in sorted(kernels, key=short):
        k = kernels[name]
        if k.get("spill_stores", 0) or k.get("spill_loads", 0):
            problems.append(f"{short(name)} spills")
        if k.get("stack", 0):  # an array indexed at run time lives in local memory
            problems.append(f"{short(name)} uses {k['stack']} bytes of stack")
        rows.append(f"| `{short(name)}` | {k['arch']} | {k.get('registers', '?')} | {k.get('smem', 0)} | "
                    f"{k.get('stack', '?')} | {k.get('spill_stores', '?')} | {k.get('spill_loads', '?')} |")
    nvcc = subprocess.run(["nvcc", "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]
    with open(args.output, "w") as f:
        f.write("# devtensor's CUDA kernels as ptxas sees them\n\n"
                "Written by `scripts/kernel-report.py` (run by `scripts/test.sh`); do not edit by hand.\n\n"
                f"- date: {datetime.date.today()}; {nvcc}; `-O3 -arch=sm_90`\n"
                "- every instantiation the library ships: elementwise kernels for float, double, int32, int64"
                " with 32- and 64-bit indices; rand, GEMM tiles and the small-batch GEMV for float and double\n"
                "- checked: no spills, no stack (local memory), and in the PTX: 16-byte loads/stores in the"
                " elementwise, rand and GEMV kernels, cp.async in the GEMM kernels, a shared tile and a barrier"
                " in the transpose kernel; no contraction by nvcc"
                " (the same fma.rn with --fmad=false), no mul+add pair ptxas may fuse, fma in the GEMM and"
                " GEMV kernels only (DESIGN §15)\n\n"
                "| kernel | arch | registers | shared memory (bytes) | stack (bytes) | spill stores | spill loads |\n"
                "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n")
    default_ptx = ptx_kernels()
    ptx, checked = ptx_problems(default_ptx)
    problems += ptx
    print(f"ptx: {checked} kernels checked for 16-byte accesses, cp.async and shuffles, {len(ptx)} lacking")
    contractions = contraction_problems(default_ptx, ptx_kernels("--fmad=false"))
    problems += contractions
    fma_kernels = sum(1 for name in default_ptx if name.startswith(FMA_KERNELS))
    print(f"ptx contractions: {len(default_ptx)} kernels, the same fma.rn with --fmad=true and false, "
          f"no fusable mul+add pair, fma in the {fma_kernels} GEMM/GEMV kernels only: "
          f"{len(contractions)} problems")
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
