#!/usr/bin/env python3
"""Dense matrix rates of the GPU this runs on (torch / cuBLAS): bf16, fp8 e4m3 and int8, best of N.

The harness's floors divide FLOPs by one of these (harness/matrix_rate.cpp holds the figures measured on the
H200); run this on a new device and record what it prints. Usage: measure_matrix_rate.py [size] [repeats]
"""
import sys

import torch


def best_rate(fn, flops, repeats):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    best = float("inf")
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        best = min(best, start.elapsed_time(end) * 1e-3)
    return flops / best


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    flops = 2.0 * n * n * n
    dev = torch.device("cuda")
    print(f"device: {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, m = n = k = {n}, best of {repeats}")
    a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
    rows = [("bf16", best_rate(lambda: a @ b, flops, repeats))]
    a8 = a.to(torch.float8_e4m3fn)
    b8 = b.to(torch.float8_e4m3fn).t().contiguous().t()  # column-major, as _scaled_mm wants
    one = torch.ones((), device=dev, dtype=torch.float32)
    rows.append(("fp8 e4m3", best_rate(lambda: torch._scaled_mm(a8, b8, scale_a=one, scale_b=one,
                                                                 out_dtype=torch.bfloat16), flops, repeats)))
    ai = torch.randint(-64, 64, (n, n), device=dev, dtype=torch.int8)
    bi = torch.randint(-64, 64, (n, n), device=dev, dtype=torch.int8).t().contiguous().t()
    rows.append(("int8", best_rate(lambda: torch._int_mm(ai, bi), flops, repeats)))
    for name, rate in rows:
        print(f"{name:9s} {rate / 1e12:8.1f} TFLOP/s")


if __name__ == "__main__":
    main()
