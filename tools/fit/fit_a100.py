#!/usr/bin/env python3
"""Fit the operator-level compute model of the A100 80 GB to Korthikanti et al. 2022 (FACTS.md).

Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models"
(arXiv 2205.05198), report iteration times on NVIDIA Selene (DGX A100 80 GB, 8 GPUs per node on
NVSwitch) for four models with full recomputation and with sequence parallelism + selective
recomputation (FACTS.md "A100 calibration points"). This script fits the three device
parameters of models/data/devices/a100-80gb.json "operator_model" (gemm_efficiency,
kernel_overhead_ns, memory_efficiency; Megatron-LM's fused kernels, 256 x 128 GEMM tiles) once
to all eight points, and prints them with the error at every point; it writes nothing to the
source tree.

Each iteration time is composed here from terasim's own per-layer numbers, because the
recomputation and sequence-parallel generators are not in the schedule IR yet:
  * per layer and micro-batch, from `terasim cost --breakdown --json` (the operator model with
    the candidate parameters): forward + backward-input + backward-weight, plus the forward
    again (full recomputation) or the attention core again (selective, with
    --sequence-parallel: LayerNorm, dropout and residual tensors split over the 8 ranks);
  * tensor-parallel communication per layer from `terasim collective` on one p4d.24xlarge
    (the same A100 NVSwitch fabric as a DGX A100): full recomputation 6 all-reduces of
    b s h fp16 values (2 forward, 2 in the recomputed forward, 2 backward); sequence
    parallelism 4 all-gathers + 4 reduce-scatters of the same tensor (2 + 2 forward, 2 + 2
    backward; the selective recomputation needs none), i.e. Korthikanti's "same communication
    volume" as tensor parallelism without recomputation;
  * the LM head (vocabulary 51200): 3 x 2 b s h V / t FLOPs on the last stage at the fitted
    GEMM rate; pipeline transfers b s h / t fp16 values (Megatron's scatter-gather) over one
    200 Gb/s HDR port per GPU, one send each way per model chunk and micro-batch;
  * the pipeline: (m + (p - 1) / v) x the per-micro-batch time of the last stage, plus the
    optimizer (28 bytes per parameter of the shard through memory).
Data parallelism is 1 in every row (no gradient all-reduce).

Usage: tools/fit/fit_a100.py [--terasim build/release/tools/terasim] [--evaluations 80]
                             [--only-report] [--start NAME=VALUE ...]
"""
import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_p3  # noqa: E402  (Nelder-Mead, the bounded transform)

ROOT = fit_p3.ROOT
DEVICE = "models/data/devices/a100-80gb.json"
SEQUENCE = 2048
VOCAB = 51200
TP = 8
PEAK = 312e12
HBM = 2.039e12
IB_BYTES_PER_S = 200e9 / 8  # one HDR port per GPU (FACTS.md: 8 x 200 Gb/s per node)
IB_LATENCY_S = 5e-6

# (name, hidden, layers, heads, pp, batch, micro-batch, interleave, full s, seq+sel s)
ROWS = [
    ("22B", 6144, 48, 64, 1, 4, 4, 1, 1.42, 1.10),
    ("175B", 12288, 96, 96, 8, 64, 1, 3, 18.13, 13.75),
    ("530B", 20480, 105, 128, 35, 280, 1, 3, 49.05, 37.83),
    ("1T", 25600, 128, 160, 64, 512, 1, 1, 94.42, 71.49),
]

PARAMETERS = [
    ("gemm_efficiency", 0.3, 1.0),
    ("kernel_overhead_ns", 1000.0, 60000.0),
    ("memory_efficiency", 0.3, 1.0),
]
fit_p3.LOG_SCALE = {"kernel_overhead_ns"}


class A100Fit:
    """The composed iteration times of ROWS on one device; fit_h100.py reuses it for H100 / H200."""

    def __init__(self, terasim, device=DEVICE, cluster="p4d.24xlarge:1", peak=PEAK, hbm=HBM,
                 link_bytes_per_s=IB_BYTES_PER_S):
        self.terasim = terasim
        self.device_path = device
        self.device_name = os.path.splitext(os.path.basename(device))[0]
        self.cluster = cluster
        self.peak = peak
        self.hbm = hbm
        self.link_bytes_per_s = link_bytes_per_s
        self.dir = tempfile.mkdtemp(prefix="terasim-fit-a100-")
        for folder in fit_p3.DATA_FOLDERS:
            if os.path.isdir(os.path.join(ROOT, folder)):
                shutil.copytree(os.path.join(ROOT, folder), os.path.join(self.dir, folder))
        self.device = json.load(open(os.path.join(ROOT, device)))
        self.cards = {}
        for name, h, layers, heads, *_ in ROWS:
            path = os.path.join(self.dir, f"a100-fit-{name}.json")
            json.dump({"name": f"a100-fit-{name}", "layers": layers, "hidden": h, "heads": heads,
                       "ffn": 4 * h, "sequence": SEQUENCE, "vocab": VOCAB,
                       "embedding_in_stack": False, "lm_head_in_stack": False,
                       "source": "Korthikanti et al. 2022 Table 3 via FACTS.md"}, open(path, "w"))
            self.cards[name] = path
        self.comm = {}
        self.count = 0

    def run(self, args):
        env = dict(os.environ, TERASIM_DATA_DIR=self.dir)
        done = subprocess.run([self.terasim] + args, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"terasim {' '.join(args)}: {done.stderr.strip()}")
        return json.loads(done.stdout)

    def collective(self, op, n):
        key = (op, n)
        if key not in self.comm:
            out = self.run(["collective", "--op", op, "--cluster", self.cluster, "--gpus",
                            str(TP), "--min-bytes", str(n), "--max-bytes", str(n), "--json"])
            self.comm[key] = out["rows"][0]["time_us"] * 1e-6
        return self.comm[key]

    def layer(self, name, rows, sequence_parallel):
        args = ["cost", "--model", self.cards[name], "--device", self.device_name, "--rows", str(rows),
                "--tokens", str(SEQUENCE), "--tp", str(TP), "--breakdown", "--json"]
        if sequence_parallel:
            args.append("--sequence-parallel")
        b = self.run(args)["breakdown"]
        return {k: v["time_ns"] * 1e-9 for k, v in b.items()}

    def write(self, values):
        device = json.loads(json.dumps(self.device))
        op = device["operator_model"]
        for name, _, _ in PARAMETERS:
            op[name] = int(round(values[name])) if name == "kernel_overhead_ns" else values[name]
        json.dump(device, open(os.path.join(self.dir, self.device_path), "w"))

    def predict(self, values):
        self.write(values)
        out = []
        for name, h, layers, heads, pp, batch, mb, v, full_s, sel_s in ROWS:
            m = batch // mb
            tensor = mb * SEQUENCE * h * 2
            full = self.layer(name, mb, False)
            sel = self.layer(name, mb, True)
            ar = self.collective("allreduce", tensor)
            ag = self.collective("allgather", tensor)
            rs = self.collective("reducescatter", tensor)
            per_layer_full = (full["forward"] + full["recompute"] + full["backward_input"] +
                              full["backward_weight"] + 6 * ar)
            per_layer_sel = (sel["forward"] + sel["recompute_selective"] + sel["backward_input"] +
                             sel["backward_weight"] + 4 * ag + 4 * rs)
            head = 3 * 2 * mb * SEQUENCE * h * VOCAB / TP / (self.peak * values["gemm_efficiency"])
            p2p = 0 if pp == 1 else 2 * v * (tensor / TP / self.link_bytes_per_s + IB_LATENCY_S)
            params = (12 * h * h + 13 * h) * layers / pp / TP
            optimizer = 28 * params / (self.hbm * values["memory_efficiency"])
            for per_layer, measured in ((per_layer_full, full_s), (per_layer_sel, sel_s)):
                stage = layers / pp * per_layer + head + p2p
                out.append((m + (pp - 1) / v) * stage + optimizer)
        return out

    def measured(self):
        return [t for row in ROWS for t in (row[8], row[9])]

    def names(self):
        return [f"{row[0]} {kind}" for row in ROWS for kind in ("full", "seq+sel")]

    def loss(self, values):
        self.count += 1
        predicted = self.predict(values)
        return sum(math.log(p / m) ** 2 for p, m in zip(predicted, self.measured())), predicted


def report(fit, values, loss, predicted, out):
    print(f"loss {loss:.5f}", file=out)
    for name, _, _ in PARAMETERS:
        print(f"  {name:<20} {values[name]:.6g}", file=out)
    for n, m, p in zip(fit.names(), fit.measured(), predicted):
        print(f"  {n:<14} measured {m:8.2f} s  predicted {p:8.2f} s  {100 * (p / m - 1):+6.1f}%",
              file=out)
    out.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terasim", default=os.path.join(ROOT, "build/release/tools/terasim"))
    parser.add_argument("--evaluations", type=int, default=80)
    parser.add_argument("--only-report", action="store_true")
    parser.add_argument("--start", nargs="*", default=[], metavar="NAME=VALUE")
    args = parser.parse_args()
    fit = A100Fit(args.terasim)
    if "operator_model" not in fit.device:
        sys.exit(f"{DEVICE}: no operator_model to start from")
    start = {name: float(fit.device["operator_model"][name]) for name, _, _ in PARAMETERS}
    for item in args.start:
        name, _, value = item.partition("=")
        if name not in start:
            sys.exit(f"--start {item}: unknown parameter")
        start[name] = float(value)
    bounds = {name: (lo, hi) for name, lo, hi in PARAMETERS}
    best = {"loss": float("inf")}

    def objective(x):
        values = {n: fit_p3.from_unit(n, xi, *bounds[n]) for n, xi in zip(start, x)}
        loss, predicted = fit.loss(values)
        if loss < best["loss"]:
            best.update(loss=loss, values=values, predicted=predicted)
        return loss

    x0 = [fit_p3.to_unit(n, start[n], *bounds[n]) for n in start]
    if args.only_report:
        objective(x0)
    else:
        fit_p3.nelder_mead(objective, x0, 0.5, args.evaluations)
    print(f"a100-80gb operator model, {fit.count} evaluations")
    report(fit, best["values"], best["loss"], best["predicted"], sys.stdout)
    shutil.rmtree(fit.dir)


if __name__ == "__main__":
    main()
