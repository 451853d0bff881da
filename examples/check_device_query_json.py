#!/usr/bin/env python3
"""Runs `device_query --json` and checks what it says: valid JSON, the expected
keys, the CPU listed first (model, cores, memory), and, without a GPU, why not.
Usage: check_device_query_json.py path/to/device_query"""
import json
import subprocess
import sys

out = subprocess.run([sys.argv[1], "--json"], check=True, capture_output=True, text=True).stdout
d = json.loads(out)
problems = []


def expect(cond, what):
    if not cond:
        problems.append(what)


for key, kind in [("devtensor_version", str), ("cuda_available", bool), ("cuda_unavailable_reason", str),
                  ("cuda_device_count", int), ("cuda_driver_version", int), ("cuda_runtime_version", int),
                  ("nvml_available", bool), ("nvml_unavailable_reason", str), ("devices", list)]:
    expect(isinstance(d.get(key), kind), f"top-level {key!r} is missing or not a {kind.__name__}")
devices = d.get("devices") or []
expect(len(devices) == 1 + d.get("cuda_device_count", 0), "devices: the CPU plus one entry per GPU")
if devices:
    cpu = devices[0]
    expect(cpu.get("device") == "cpu" and cpu.get("kind") == "cpu", "the first device is the CPU")
    expect(isinstance(cpu.get("name"), str) and cpu["name"] != "", "the CPU has a model name")
    expect(isinstance(cpu.get("cores"), int) and cpu["cores"] >= 1, "the CPU has cores")
    expect(cpu.get("total_memory", 0) > 0, "the CPU has memory")
    expect(0 <= cpu.get("free_memory", -1) <= cpu.get("total_memory", 0), "free <= total memory")
    for key in ("used_memory", "allocated", "max_allocated"):
        expect(isinstance(cpu.get(key), int), f"the CPU has {key!r}")
for gpu in devices[1:]:
    expect(gpu.get("kind") == "cuda", "every other device is a GPU")
    for key in ("name", "compute_capability", "multiprocessors", "total_memory", "free_memory", "used_memory",
                "allocated", "max_allocated", "driver_version", "runtime_version", "utilization_gpu",
                "utilization_memory", "temperature_c", "power_mw", "driver_release"):
        expect(key in gpu, f"{gpu.get('device')} has {key!r}")
    if d.get("nvml_available"):
        expect(isinstance(gpu.get("driver_release"), str), "NVML gives the driver release")
if d.get("cuda_available"):
    expect(d.get("cuda_unavailable_reason") == "", "no reason when CUDA is available")
    expect(d.get("cuda_device_count", 0) >= 1, "CUDA available means a device")
else:
    expect(d.get("cuda_unavailable_reason", "") != "", "without a GPU, cuda_unavailable_reason says why")
    expect(d.get("cuda_device_count") == 0, "no GPU listed")
expect(d.get("nvml_available") == (d.get("nvml_unavailable_reason") == ""), "NVML: a reason exactly when absent")

if problems:
    print(out)
    print("device_query --json: " + "; ".join(problems))
    sys.exit(1)
print(f"device_query --json: OK ({len(devices)} device(s); CUDA: "
      f"{'available' if d['cuda_available'] else d['cuda_unavailable_reason']}; NVML: "
      f"{'loaded' if d['nvml_available'] else d['nvml_unavailable_reason']})")
