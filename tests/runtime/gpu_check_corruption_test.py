#!/usr/bin/env python3
"""runtime_gpu_check detects a corrupted tensor (runtime/gpu_check.cc).

  gpu_check_corruption_test.py GPU_CHECK [FLAGS...]

Runs GPU_CHECK with FLAGS (on the fake libcudart, $SWAPPLAN_RT_CUDA_LIBRARY)
twice: as given, which must pass (exit 0, "gpu-check: OK"), and with
--inject-corruption 5 (one wrong byte written into tensor 5 on the device
after the last verification iteration's swap-in), which must fail with exit
1 and the message naming tensor 5, that iteration and the offset
(tensor-bytes / 2 + 3). Exit 1 listing what differed.
"""
import subprocess
import sys


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
    return p.returncode, p.stdout + p.stderr


def flag(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    problems = []
    rc, out = run([binary] + args)
    if rc != 0 or "gpu-check: OK" not in out:
        problems.append(f"clean run: exit {rc}, expected 0 and 'gpu-check: OK':\n{out}")
    iterations = int(flag(args, "--iterations", "5"))
    size = flag(args, "--tensor-bytes", "")
    units = {"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}
    unit = next((u for u in units if size.endswith(u)), None)
    tensor_bytes = int(size[: -len(unit)]) * units[unit] if unit else int(size)
    want = (f"gpu-check: FAILED data mismatch: tensor 5, iteration {iterations - 1}, "
            f"first bad offset {tensor_bytes // 2 + 3}")
    rc, out = run([binary] + args + ["--inject-corruption", "5"])
    if rc != 1 or want not in out:
        problems.append(f"corrupted run: exit {rc}, expected 1 and '{want}':\n{out}")
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
