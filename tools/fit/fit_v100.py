#!/usr/bin/env python3
"""Fit the operator-level compute model of the V100 (models/operator_cost.h) to FACTS.md's calibration points.

The operator model has five device parameters, fitted here once for the V100 and written by hand
into models/data/devices/v100-sxm2-16gb.json ("operator_model"):
  * gemm_efficiency     fraction of the tensor-core peak one full GEMM tile reaches on an SM
  * kernel_overhead_ns  host time to issue one kernel (PyTorch dispatch plus launch)
  * memory_efficiency   fraction of the HBM bandwidth memory-bound kernels reach
  * kernel_gpu_ns       GPU time of every kernel beyond its roofline (launch, ramp-up, drain)
  * tile_k_overhead     a GEMM tile's prologue and epilogue, in steps of k
  * gemm_memory_efficiency  fraction of the HBM bandwidth a GEMM's operand streams reach
  * backward_kernel_overhead_ns  host time per backward kernel (autograd's engine; absent: the
    forward's kernel_overhead_ns; `--start backward_kernel_overhead_ns=V` frees it)
  * layout_memory_efficiency  fraction of the HBM bandwidth the memory operators that do not
    stream contiguous tensors reach (row reductions: LayerNorm, softmax, bias gradients; the
    mask broadcast over heads; permuting and strided copies; models/layer_operators.h
    LayerOperator::layout; absent: memory_efficiency; `--start layout_memory_efficiency=V`
    frees it)
  * collective_host_ns  host time per tensor-parallel collective call at tp > 1 (two per layer
    forward, two per backward: the tensor-parallel layers' autograd functions and NCCL calls,
    which a single-layer timing at tp 1 never pays; absent: no such calls; `--start
    collective_host_ns=V` frees it)
  * host_runs_ahead     1: the host runs ahead of the GPU across ops (models/operator_cost.h; a
    training loop that never synchronizes), 0: every op from an empty queue (absent; `--start
    host_runs_ahead=1 --fix host_runs_ahead=1` turns it on, it is not a continuous parameter)
(--fix NAME=VALUE holds any of them. The fit in the data file frees kernel_overhead_ns,
memory_efficiency, kernel_gpu_ns, layout_memory_efficiency and collective_host_ns and fixes
gemm_efficiency=0.9 tile_k_overhead=0 host_runs_ahead=1 gemm_memory_efficiency=0.833 (the
data file's note has the command): a GEMM's operand streams at the
V100's measured 750 GB/s of global memory bandwidth over 900 GB/s, Jia et al. 2018, "Dissecting the
NVIDIA Volta GPU Architecture via Microbenchmarking"; the elementwise kernels, whose largest
traffic in TeraPipe's runs is `w.grad += grad_w`, at the fitted memory_efficiency.)
The GEMM tiles (128 x 128 and the narrower / wider Volta tiles of "tiles", each GEMM on the
fastest; the L2 bandwidth that feeds them, from the same paper), the unfused kernel list
(TeraPipe's own eager PyTorch layer, models/layer_operators.h) and weight_gradient_passes stay as the data file says. The network (topologies/data/p3.16xlarge.json)
keeps the joint fit of tools/fit/fit_p3.py unless --with-network frees its efficiency and latency.

The points, the loss (squared log ratios; simulated points weigh 2) and the optimiser are
fit_p3.py's. --layer-no-kv-cache costs the gpt3-1b layer points without the key/value cache
(`terasim cost --no-kv-cache`: 24 kernels per forward, not the 27 of a training run's first
slice): TeraPipe's repository holds no script for the paper's gpt3-1b figure, but its
single-device latency script (model_latency_decomposition.py, November 2020, archived February
2021) times a layer at context 0 with cache None. It raises the loss (README, model accuracy),
so the data file's fit keeps the cache. --layer-synchronized costs the gpt3-1b layer points with
`terasim cost --synchronized` (host_runs_ahead off for that op): a forward timed between two
torch.cuda.synchronize() calls, as TeraPipe's latency scripts time one, has no host lead (the
data file's fit uses it). Every candidate is written to a private copy of the
data folders and evaluated with the terasim binary (`terasim cost` for the layer points, `terasim simulate` for the settings),
with "default": true so that simulate uses the operator model. Prints the parameters and the
error at every point; writes nothing to the source tree.

Usage: tools/fit/fit_v100.py [--terasim build/release/tools/terasim] [--evaluations 60] [--jobs 2]
                             [--network analytic|flow] [--with-network] [--only-report]
                             [--start NAME=VALUE ...] [--fix NAME=VALUE ...]
                             [--layer-no-kv-cache] [--layer-synchronized]
                             [--loss squares|minimax]
"""
import argparse
import json
import os
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fit_p3  # noqa: E402  (the points, the evaluator and Nelder-Mead)

OPERATOR_PARAMETERS = [
    ("gemm_efficiency", 0.3, 1.0, "operator"),
    ("kernel_overhead_ns", 5000.0, 150000.0, "operator"),
    ("memory_efficiency", 0.3, 1.0, "operator"),
    ("kernel_gpu_ns", 0.0, 60000.0, "operator"),
    ("tile_k_overhead", 0.0, 1024.0, "operator"),
    ("gemm_memory_efficiency", 0.3, 1.0, "operator"),
    ("backward_kernel_overhead_ns", 5000.0, 300000.0, "operator"),
    ("layout_memory_efficiency", 0.1, 1.0, "operator"),
    ("collective_host_ns", 1000.0, 1000000.0, "operator"),
    ("host_runs_ahead", 0.0, 1.0, "operator"),
]
# Optional in the data file: 0 writes them absent (their fallbacks: memory_efficiency,
# kernel_overhead_ns, memory_efficiency).
OPTIONAL = {"gemm_memory_efficiency", "backward_kernel_overhead_ns", "layout_memory_efficiency",
            "collective_host_ns", "host_runs_ahead"}
INTEGER = {"kernel_overhead_ns", "kernel_gpu_ns", "tile_k_overhead", "backward_kernel_overhead_ns",
           "collective_host_ns"}
NETWORK_PARAMETERS = [
    ("efficiency", 0.3, 1.0, "network"),
    ("latency_us", 5.0, 2000.0, "network"),
]
fit_p3.LOG_SCALE = {"kernel_overhead_ns", "backward_kernel_overhead_ns", "latency_us",
                    "collective_host_ns"}


class OperatorEvaluator(fit_p3.Evaluator):
    def write(self, values):
        device = json.loads(json.dumps(self.device))
        instance = json.loads(json.dumps(self.instance))
        op = device["operator_model"]
        op["default"] = True
        for name, _, _, where in fit_p3.PARAMETERS:
            v = values[name]
            if where == "operator":
                if name == "host_runs_ahead":
                    if v > 0:
                        op[name] = True
                    else:
                        op.pop(name, None)
                elif name in OPTIONAL and v <= 0:
                    op.pop(name, None)  # 0: absent (memory_efficiency / kernel_overhead_ns)
                else:
                    op[name] = int(round(v)) if name in INTEGER else v
            else:
                instance["network"][name] = v
        with open(os.path.join(self.dir, fit_p3.DEVICE), "w") as f:
            json.dump(device, f)
        with open(os.path.join(self.dir, fit_p3.INSTANCE), "w") as f:
            json.dump(instance, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terasim", default=os.path.join(fit_p3.ROOT, "build/release/tools/terasim"))
    parser.add_argument("--evaluations", type=int, default=60)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--network", default="analytic", choices=["analytic", "flow"])
    parser.add_argument("--with-network", action="store_true",
                        help="fit the p3.16xlarge network's efficiency and latency too")
    parser.add_argument("--start", nargs="*", default=[], metavar="NAME=VALUE")
    parser.add_argument("--fix", nargs="*", default=[], metavar="NAME=VALUE")
    parser.add_argument("--layer-weight", type=float, default=1.0)
    parser.add_argument("--layer-no-kv-cache", action="store_true",
                        help="cost the gpt3-1b layer points without the key/value cache, as "
                             "TeraPipe's latency script ran a layer at context 0 (default: with "
                             "it, as a training run's first slice)")
    parser.add_argument("--layer-synchronized", action="store_true",
                        help="cost the gpt3-1b layer points without host_runs_ahead: a forward "
                             "timed from a synchronized start, as TeraPipe's latency scripts time "
                             "one (torch.cuda.synchronize() before and after)")
    parser.add_argument("--only-report", action="store_true")
    parser.add_argument("--loss", default="squares", choices=["squares", "minimax"],
                        help="minimax: the largest relative error, every point alike")
    args = parser.parse_args()

    fit_p3.PARAMETERS = OPERATOR_PARAMETERS + (NETWORK_PARAMETERS if args.with_network else [])
    ev = OperatorEvaluator(args.terasim, args.jobs, args.network, 0, "serial")
    if "operator_model" not in ev.device:
        sys.exit(f"{fit_p3.DEVICE}: no operator_model to start from")
    start = {}
    for name, _, _, where in fit_p3.PARAMETERS:
        source = ev.device["operator_model"] if where == "operator" else ev.instance["network"]
        start[name] = float(source.get(name, 0.0))
    fixed = {}
    for items, target in ((args.start, start), (args.fix, fixed)):
        for item in items:
            name, _, value = item.partition("=")
            if name not in start:
                sys.exit(f"{item}: unknown parameter (one of {', '.join(start)})")
            target[name] = float(value)
    # An optional parameter the data file leaves out (0: absent) stays out unless --start frees it.
    started = {item.partition("=")[0] for item in args.start}
    for name, _, _, where in fit_p3.PARAMETERS:
        if where == "operator" and name not in ev.device["operator_model"] and name not in started:
            fixed.setdefault(name, 0.0)
    for p in fit_p3.POINTS:
        if p["args"][0] == "cost":
            p["weight"] = args.layer_weight
            if args.layer_synchronized:
                # Timed from a synchronized start: the host has no lead over the GPU.
                p["args"] = p["args"] + ["--synchronized"]
            if args.layer_no_kv_cache:
                p["args"] = p["args"] + ["--no-kv-cache"]
    bounds = {name: (lo, hi) for name, lo, hi, _ in fit_p3.PARAMETERS}
    free = [name for name, *_ in fit_p3.PARAMETERS if name not in fixed]

    def values_of(x):
        values = dict(fixed)
        values.update({n: fit_p3.from_unit(n, xi, *bounds[n]) for n, xi in zip(free, x)})
        return values

    best = {"loss": float("inf")}

    def objective(x):
        values = values_of(x)
        loss, predicted = ev.loss(values, minimax=args.loss == "minimax")
        if loss < best["loss"]:
            best.update(loss=loss, values=values, predicted=predicted)
            print(f"[{ev.count}] new best", file=sys.stderr)
            fit_p3.report(values, loss, predicted, sys.stderr)
        return loss

    x0 = [fit_p3.to_unit(n, start[n], *bounds[n]) for n in free]
    if args.only_report:
        objective(x0)
    else:
        fit_p3.nelder_mead(objective, x0, 0.5, args.evaluations)
    print(f"operator model, network {args.network}, {ev.count} evaluations")
    fit_p3.report(best["values"], best["loss"], best["predicted"], sys.stdout)
    shutil.rmtree(ev.dir)


if __name__ == "__main__":
    main()
