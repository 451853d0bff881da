#!/usr/bin/env python3
"""devtensor's safetensors files against the Python safetensors package (CTest: safetensors_python).

    safetensors_check.py TEST_BINARY WORKDIR

1. runs TEST_BINARY's "safetensors interop: devtensor writes" case, which saves an MLP
   (float and double) with known values, and adam's state, into WORKDIR;
2. reads them with safetensors (safe_open, numpy) and checks names, dtypes, shapes,
   values and metadata;
3. writes files the way Python users do (safetensors.numpy.save_file), and
4. runs the "devtensor reads" case, which loads them and checks the values.

Needs the safetensors and numpy packages (scripts/test.sh installs them in a venv).
"""
import os
import re
import struct
import subprocess
import sys

import numpy as np
from safetensors import safe_open
from safetensors.numpy import save_file

# The MLP of tests/test_serialize.cpp: sequential(linear(3, 5), relu, linear(5, 2)).
PARAMS = [("0.weight", (5, 3)), ("0.bias", (5,)), ("2.weight", (2, 5)), ("2.bias", (2,))]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAILED:", what)


def devtensor_values(k, shape, dtype):  # element i of tensor k: (k + 1) + i/8
    n = int(np.prod(shape))
    return ((k + 1) + np.arange(n, dtype=np.float64) / 8).astype(dtype).reshape(shape)


def python_values(k, shape, dtype):  # element i of tensor k: -(k + 1) - i/16
    n = int(np.prod(shape))
    return (-(k + 1) - np.arange(n, dtype=np.float64) / 16).astype(dtype).reshape(shape)


def run_case(binary, workdir, name):
    env = dict(os.environ, DEVTENSOR_SAFETENSORS_DIR=workdir)
    result = subprocess.run([binary, "-tc=" + name], env=env, capture_output=True, text=True)
    print(result.stdout[-3000:], result.stderr[-3000:], sep="")
    ran = re.search(r"test cases:\s*(\d+)\s*\|\s*(\d+) passed", result.stdout)
    check(result.returncode == 0 and ran is not None and ran.group(1) == "1" and ran.group(2) == "1",
          f"the test case {name!r} ran and passed")


def read_devtensor_files(workdir):
    for dtype, code in ((np.float32, "F32"), (np.float64, "F64")):
        path = os.path.join(workdir, f"devtensor_{code.lower()}.safetensors")
        with safe_open(path, framework="numpy") as f:
            check(sorted(f.keys()) == sorted(name for name, _ in PARAMS), f"{path}: names {sorted(f.keys())}")
            check(f.metadata() == {"format": "pt"}, f"{path}: metadata {f.metadata()}")
            for k, (name, shape) in enumerate(PARAMS):
                t = f.get_tensor(name)
                check(t.dtype == dtype and t.shape == shape, f"{path}: {name} is {t.dtype} {t.shape}")
                check(np.array_equal(t, devtensor_values(k, shape, dtype)), f"{path}: the values of {name}")
        # the layout the reference writes: an 8-byte length, the header padded to 8 bytes
        with open(path, "rb") as raw:
            (n,) = struct.unpack("<Q", raw.read(8))
            check(n % 8 == 0 and raw.read(1) == b"{", f"{path}: header length {n}, padded, starting with {{")

    path = os.path.join(workdir, "devtensor_adam.safetensors")
    with safe_open(path, framework="numpy") as f:
        meta = f.metadata()
        check(meta.get("optimizer") == "adam" and meta.get("param_groups.0.lr") == "0.01", f"{path}: metadata {meta}")
        expected = sorted(f"state.{k}.{key}" for k in range(4) for key in ("step", "exp_avg", "exp_avg_sq"))
        check(sorted(f.keys()) == expected, f"{path}: names {sorted(f.keys())}")
        for k, (_, shape) in enumerate(PARAMS):
            step = f.get_tensor(f"state.{k}.step")
            check(step.dtype == np.float32 and step.shape == () and step == 2, f"{path}: state.{k}.step is {step!r}")
            for key in ("exp_avg", "exp_avg_sq"):
                t = f.get_tensor(f"state.{k}.{key}")
                check(t.dtype == np.float32 and t.shape == shape and np.all(np.isfinite(t)), f"{path}: state.{k}.{key}")
            check(np.all(f.get_tensor(f"state.{k}.exp_avg_sq") >= 0), f"{path}: state.{k}.exp_avg_sq >= 0")


def write_python_files(workdir):
    for dtype, code in ((np.float32, "f32"), (np.float64, "f64")):
        tensors = {name: python_values(k, shape, dtype) for k, (name, shape) in enumerate(PARAMS)}
        save_file(tensors, os.path.join(workdir, f"python_{code}.safetensors"), metadata={"format": "pt"})
    state = {}
    for k, (_, shape) in enumerate(PARAMS):
        state[f"state.{k}.step"] = np.array(7, dtype=np.float32)  # PyTorch keeps the step as a float32 scalar
        state[f"state.{k}.exp_avg"] = python_values(k, shape, np.float32)
        state[f"state.{k}.exp_avg_sq"] = -python_values(k, shape, np.float32)
    save_file(state, os.path.join(workdir, "python_adam.safetensors"))  # no metadata: taken as it is


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    binary, workdir = sys.argv[1], sys.argv[2]
    os.makedirs(workdir, exist_ok=True)
    run_case(binary, workdir, "safetensors interop: devtensor writes")
    if not failures:
        read_devtensor_files(workdir)
    write_python_files(workdir)
    run_case(binary, workdir, "safetensors interop: devtensor reads")
    if failures:
        print(f"safetensors_check: {len(failures)} failed")
        sys.exit(1)
    print("safetensors_check: devtensor and the safetensors package read each other's files")


if __name__ == "__main__":
    main()
