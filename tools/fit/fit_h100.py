#!/usr/bin/env python3
"""Operator-model parameters of the H100 SXM and the H200 from public figures, with predictions.

FACTS.md has no measured iteration on Hopper, so nothing is fitted to a measurement here. The
three parameters of "operator_model" (models/operator_cost.h) are the A100 80 GB fit's
(tools/fit/fit_a100.py, eight Korthikanti et al. 2022 points) carried over by published ratios:

  * gemm_efficiency (the fraction of the tensor-core peak one full GEMM tile reaches): the A100
    fit's 0.782 times the ratio of the two chips' maximum achievable matmul FLOPS fractions,
    measured with one benchmark (S. Bekman, "Machine Learning Engineering", compute/accelerator
    README, "Maximum Achievable Matmul FLOPS comparison table", bf16, CUDA 12.1: A100 SXM
    267.9 of 312 TFLOP/s = 85.9 %, H100 SXM 792.1 of 989 TFLOP/s = 80.1 %):
        0.782 x 0.801 / 0.859 = 0.7294.
    The H200 is the same GH100 chip at the same clocks (989 TFLOP/s dense bf16), so the same.
  * memory_efficiency (fraction of the datasheet bandwidth that memory-bound kernels reach): the
    A100 fit's 0.707, as a fraction of each card's own datasheet bandwidth (H100 SXM 3.35 TB/s
    HBM3, H200 4.8 TB/s HBM3e). No measured Hopper stream figure this session could verify.
  * kernel_overhead_ns (host time per kernel, Megatron-LM's dispatch and launch): the A100's.
  * 256 x 128 tiles and fused kernels, as on the A100 (Megatron-LM; cuBLAS's Hopper bf16
    kernels come in 128 x 256 / 256 x 128 tiles too).

It prints the parameters (to be copied into models/data/devices/h100-80gb.json and h200.json
by hand, as the A100's were) and the iteration times the operator model then predicts for the
Korthikanti et al. rows, composed exactly as fit_a100.py composes them: tensor-parallel
collectives from `terasim collective` on one p5.48xlarge / p5e.48xlarge (NVSwitch, NVLink 4
900 GB/s), pipeline transfers over one 400 Gb/s share of the 3200 Gb/s EFA per GPU. These are
predictions only, to compare with the A100's measured rows: no Hopper point is measured.

Usage: tools/fit/fit_h100.py [--terasim build/release/tools/terasim]
"""
import argparse
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_a100  # noqa: E402  (the rows and their composition)

A100_FIT = {"gemm_efficiency": 0.782, "kernel_overhead_ns": 20163, "memory_efficiency": 0.7069}
MAMF_A100 = 267.9 / 312.0  # Bekman's MAMF table, A100 SXM bf16
MAMF_H100 = 792.1 / 989.0  # Bekman's MAMF table, H100 SXM bf16
EFA_BYTES_PER_S = 400e9 / 8  # 3200 Gb/s EFA per p5 instance, one eighth per GPU

DEVICES = [
    # (device file, cluster of one instance, peak bf16 FLOP/s, HBM bytes/s)
    ("models/data/devices/h100-80gb.json", "p5.48xlarge:1", 989e12, 3.35e12),
    ("models/data/devices/h200.json", "p5e.48xlarge:1", 989e12, 4.8e12),
]


def parameters():
    return {
        "gemm_efficiency": round(A100_FIT["gemm_efficiency"] * MAMF_H100 / MAMF_A100, 4),
        "kernel_overhead_ns": A100_FIT["kernel_overhead_ns"],
        "memory_efficiency": A100_FIT["memory_efficiency"],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terasim",
                        default=os.path.join(fit_a100.ROOT, "build/release/tools/terasim"))
    args = parser.parse_args()
    values = parameters()
    print("parameters (A100 fit x published ratios):")
    for name, value in values.items():
        print(f"  {name:<20} {value:.6g}")
    for device, cluster, peak, hbm in DEVICES:
        fit = fit_a100.A100Fit(args.terasim, device=device, cluster=cluster, peak=peak, hbm=hbm,
                               link_bytes_per_s=EFA_BYTES_PER_S)
        predicted = fit.predict(values)
        print(f"{fit.device_name} ({cluster}): predicted iteration times, no measured point")
        for n, a100, p in zip(fit.names(), fit.measured(), predicted):
            print(f"  {n:<14} predicted {p:8.2f} s   (A100 80 GB measured {a100:8.2f} s,"
                  f" ratio {a100 / p:4.2f})")
        shutil.rmtree(fit.dir)


if __name__ == "__main__":
    main()
