#!/usr/bin/env python3
"""One joint fit of the V100 compute model and the p3.16xlarge network to FACTS.md's calibration points.

The fitted numbers live in models/data/devices/v100-sxm2-16gb.json ("compute_model") and
topologies/data/p3.16xlarge.json ("network"); their notes cite this script. It is run once per
device and network, never per experiment, and writes nothing: it prints the parameters and the
error at every calibration point, to be copied into the two data files by hand.

Calibration points (FACTS.md, measured on the paper's cluster):
  * one gpt3-1b layer forward on one V100: about 1.45 ms from 1 to 256 tokens, about 2.7 ms at 1024
  * setting 5 (gpt3-13b, 40 instances, 1 x 40 x 8, batch 32): 1.863 s without token slicing,
    1.328 s with the slices [704, 688, 656] of every sequence
  * setting 9 (gpt3-175b, 48 instances, 1 x 96 x 4, batch 2): 9.990 s without, 1.481 s with the
    published slicing; uniform slicing into n = 4, 8, 16, 32, 64, 128 slices: 2.902, 1.892, 1.547,
    1.593, 2.227, 3.252 s

Each candidate parameter set is written to a private copy of the data folders (TERASIM_DATA_DIR);
`terasim cost` predicts the layer points and `terasim simulate` (the same schedules as
`terasim compare --paper`: GPipe flush with one sequence per micro-batch, TeraPipe flush, the
broadcast boundary) the iteration times. The loss is the sum of squared log ratios; Nelder-Mead
minimises it over bounded, transformed parameters.

Usage: tools/fit/fit_p3.py [--terasim build/release/tools/terasim] [--evaluations 150] [--jobs 2]
                           [--network analytic|flow] [--weight-gradient-passes 2]
                           [--layer-form additive|scores|serial|overlap]
                           [--start NAME=VALUE ...] [--fix NAME=VALUE ...] [--layer-weight 1]
                           [--loss squares|minimax]
                           [--only-report]
"""
import argparse
import concurrent.futures
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEVICE = "models/data/devices/v100-sxm2-16gb.json"
INSTANCE = "topologies/data/p3.16xlarge.json"
DATA_FOLDERS = ["models/data", "topologies/data", "sim/data", "tools/data", "traces/data"]

S9_SLICING = "1:[120,120,120,120,112,112,112,112,112,112,104,104,104,104,104,104,104,104,64]x2"

# (name, lower, upper, where): the fitted parameters and their physical ranges.
PARAMETERS = [
    ("efficiency_max", 0.2, 0.95, "compute"),
    ("saturation_flops", 1e9, 1e12, "compute"),
    ("sharpness", 1.0, 64.0, "compute"),  # the data file allows [1, 64]
    ("kernel_overhead_ns_per_layer", 0.0, 3e6, "compute"),
    ("efficiency", 0.3, 1.0, "network"),
    ("latency_us", 5.0, 2000.0, "network"),
]
# --layer-form overlap (models/roofline_cost.h): a pass costs the smooth maximum
# (H^q + G^q)^(1/q) of the host time H = kernel_overhead_ns_per_layer and the GPU time
# G = compute + memory, the memory including score_bytes_per_element per score element.
OVERLAP_PARAMETERS = [
    ("host_overlap_sharpness", 1.0, 64.0, "compute"),
    ("score_bytes_per_element", 0.0, 128.0, "compute"),
]
OVERLAP_START = {"host_overlap_sharpness": 8.0, "score_bytes_per_element": 16.0}
LOG_SCALE = {"saturation_flops", "latency_us", "host_overlap_sharpness"}


def layer_point(tokens, measured_s):
    args = ["cost", "--model", "gpt3-1b", "--device", "v100-sxm2-16gb", "--tokens", str(tokens),
            "--json"]
    return {"name": f"gpt3-1b layer fwd {tokens} tok", "args": args, "measured_s": measured_s,
            "read": lambda d: d["fwd_time_ns"] * 1e-9, "weight": 1.0}


def sim_point(name, measured_s, args):
    return {"name": name, "args": ["simulate"] + args + ["--boundary", "broadcast", "--json"],
            "measured_s": measured_s, "read": lambda d: d["iteration_time_s"], "weight": 2.0}


S5 = ["--model", "gpt3-13b", "--cluster", "p3.16xlarge:40", "--pp", "40", "--tp", "8"]
S9 = ["--model", "gpt3-175b", "--cluster", "p3.16xlarge:48", "--pp", "96", "--tp", "4"]
POINTS = [
    layer_point(1, 1.45e-3),
    layer_point(256, 1.45e-3),
    layer_point(1024, 2.7e-3),
    sim_point("setting 5 without", 1.863, ["--strategy", "gpipe", "--microbatches", "32"] + S5),
    sim_point("setting 5 with [704,688,656]", 1.328,
              ["--strategy", "terapipe", "--slicing", "1:[704,688,656]x32"] + S5),
    sim_point("setting 9 with published", 1.481,
              ["--strategy", "terapipe", "--slicing", S9_SLICING] + S9),
] + [
    sim_point(f"setting 9 uniform {n}", t, ["--strategy", "terapipe", "--microbatches", "2", "--slices", str(n)] + S9)
    for n, t in [(1, 9.990), (4, 2.902), (8, 1.892), (16, 1.547), (32, 1.593), (64, 2.227),
                 (128, 3.252)]
]


def to_unit(name, value, lo, hi):
    """Parameter value -> unbounded coordinate (logit of the position in [lo, hi])."""
    if name in LOG_SCALE:
        value, lo, hi = math.log(value), math.log(lo), math.log(hi)
    p = min(max((value - lo) / (hi - lo), 1e-6), 1 - 1e-6)
    return math.log(p / (1 - p))


def from_unit(name, x, lo, hi):
    p = 1 / (1 + math.exp(-x))
    if name in LOG_SCALE:
        return math.exp(math.log(lo) + p * (math.log(hi) - math.log(lo)))
    return lo + p * (hi - lo)


class Evaluator:
    def __init__(self, terasim, jobs, network, passes, layer_form):
        self.terasim = terasim
        self.jobs = jobs
        self.network = network
        self.passes = passes
        self.layer_form = layer_form
        self.dir = tempfile.mkdtemp(prefix="terasim-fit-")
        for folder in DATA_FOLDERS:
            if os.path.isdir(os.path.join(ROOT, folder)):
                shutil.copytree(os.path.join(ROOT, folder), os.path.join(self.dir, folder))
        self.device = json.load(open(os.path.join(ROOT, DEVICE)))
        self.instance = json.load(open(os.path.join(ROOT, INSTANCE)))
        self.count = 0

    def write(self, values):
        device = json.loads(json.dumps(self.device))
        instance = json.loads(json.dumps(self.instance))
        for name, _, _, where in PARAMETERS:
            v = values[name]
            if where == "compute":
                if name == "kernel_overhead_ns_per_layer":
                    v = int(round(v))
                device["compute_model"][name] = v
            else:
                instance["network"][name] = v
        device["compute_model"]["weight_gradient_passes"] = self.passes
        if self.layer_form == "serial":
            device["compute_model"]["score_kernels_serial"] = True
        else:
            device["compute_model"].pop("score_kernels_serial", None)
        fitted = {name for name, *_ in PARAMETERS}
        for name, *_ in OVERLAP_PARAMETERS:
            if name not in fitted:
                device["compute_model"].pop(name, None)
        with open(os.path.join(self.dir, DEVICE), "w") as f:
            json.dump(device, f)
        with open(os.path.join(self.dir, INSTANCE), "w") as f:
            json.dump(instance, f)

    def run(self, point):
        args = [self.terasim] + point["args"]
        if args[1] == "simulate":
            args += ["--network", self.network]
        env = dict(os.environ, TERASIM_DATA_DIR=self.dir)
        done = subprocess.run(args, capture_output=True, text=True, env=env)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)}: {done.stderr.strip()}")
        out = done.stdout
        return point["read"](json.loads(out))

    def predict(self, values):
        self.write(values)
        with concurrent.futures.ThreadPoolExecutor(self.jobs) as pool:
            # The slowest simulations first, so that the pool stays busy.
            order = sorted(range(len(POINTS)), key=lambda i: -len(" ".join(POINTS[i]["args"])))
            futures = {i: pool.submit(self.run, POINTS[i]) for i in order}
            return [futures[i].result() for i in range(len(POINTS))]

    def loss(self, values, minimax=False):
        self.count += 1
        predicted = self.predict(values)
        if minimax:  # the largest relative error, every point alike
            return max(abs(math.log(v / p["measured_s"])) for p, v in zip(POINTS, predicted)), \
                predicted
        return sum(p["weight"] * math.log(v / p["measured_s"]) ** 2
                   for p, v in zip(POINTS, predicted)), predicted


def nelder_mead(f, x0, step, evaluations):
    n = len(x0)
    simplex = [list(x0)] + [[x0[j] + (step if j == i else 0) for j in range(n)] for i in range(n)]
    values = [f(x) for x in simplex]
    used = n + 1
    while used < evaluations:
        order = sorted(range(n + 1), key=lambda i: values[i])
        simplex = [simplex[i] for i in order]
        values = [values[i] for i in order]
        centroid = [sum(simplex[i][j] for i in range(n)) / n for j in range(n)]

        def along(t):
            return [centroid[j] + t * (simplex[-1][j] - centroid[j]) for j in range(n)]

        xr = along(-1.0)
        fr = f(xr)
        used += 1
        if fr < values[0]:
            xe = along(-2.0)
            fe = f(xe)
            used += 1
            simplex[-1], values[-1] = (xe, fe) if fe < fr else (xr, fr)
        elif fr < values[-2]:
            simplex[-1], values[-1] = xr, fr
        else:
            xc = along(0.5) if fr >= values[-1] else along(-0.5)
            fc = f(xc)
            used += 1
            if fc < min(fr, values[-1]):
                simplex[-1], values[-1] = xc, fc
            else:
                for i in range(1, n + 1):
                    simplex[i] = [simplex[0][j] + 0.5 * (simplex[i][j] - simplex[0][j])
                                  for j in range(n)]
                    values[i] = f(simplex[i])
                    used += 1
    best = min(range(n + 1), key=lambda i: values[i])
    return simplex[best], values[best]


def report(values, loss, predicted, out):
    print(f"loss {loss:.5f}", file=out)
    for name, _, _, where in PARAMETERS:
        print(f"  {where:<8} {name:<30} {values[name]:.6g}", file=out)
    for p, v in zip(POINTS, predicted):
        print(f"  {p['name']:<34} measured {p['measured_s']:9.4f} s  predicted {v:9.4f} s"
              f"  {100 * (v / p['measured_s'] - 1):+6.1f}%", file=out)
    out.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--terasim", default=os.path.join(ROOT, "build/release/tools/terasim"))
    parser.add_argument("--evaluations", type=int, default=150)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--network", default="analytic", choices=["analytic", "flow"])
    parser.add_argument("--weight-gradient-passes", type=int, default=2)
    parser.add_argument("--start", nargs="*", default=[], metavar="NAME=VALUE",
                        help="starting values (default: the data files' current values)")
    parser.add_argument("--fix", nargs="*", default=[], metavar="NAME=VALUE",
                        help="hold these parameters at these values (e.g. sharpness=8)")
    parser.add_argument("--layer-weight", type=float, default=1.0,
                        help="weight of the gpt3-1b layer points (the simulated points weigh 2)")
    parser.add_argument("--layer-form", choices=["additive", "scores", "serial", "overlap"],
                        help="additive: overhead + max(compute, memory) per layer pass; scores: "
                        "the same, fitting score_bytes_per_element too; serial: the score traffic's time added "
                        "after the max (score_kernels_serial); overlap: the smooth maximum of host and GPU time, fitting "
                        "host_overlap_sharpness and score_bytes_per_element too (default: the data file's form)")
    parser.add_argument("--loss", choices=["squares", "minimax"], default="squares",
                        help="squares: the weighted sum of squared log errors; minimax: the "
                        "largest absolute log error (to polish a fit against the 5%% bar)")
    parser.add_argument("--only-report", action="store_true",
                        help="evaluate the starting point and print it; no fitting")
    args = parser.parse_args()
    if args.layer_form is None:
        device = json.load(open(os.path.join(ROOT, DEVICE)))
        overlap = "host_overlap_sharpness" in device["compute_model"]
        scores = "score_bytes_per_element" in device["compute_model"]
        serial = device["compute_model"].get("score_kernels_serial", False)
        args.layer_form = ("overlap" if overlap else "serial" if serial else
                           "scores" if scores else "additive")
    if args.layer_form == "overlap":
        PARAMETERS.extend(OVERLAP_PARAMETERS)
    elif args.layer_form in ("scores", "serial"):
        PARAMETERS.extend(OVERLAP_PARAMETERS[1:])

    ev = Evaluator(args.terasim, args.jobs, args.network, args.weight_gradient_passes,
                   args.layer_form)
    start = {}
    for name, lo, hi, where in PARAMETERS:
        source = ev.device["compute_model"] if where == "compute" else ev.instance["network"]
        start[name] = float(source.get(name, OVERLAP_START.get(name, 0.0)))
    for item in args.start:
        name, _, value = item.partition("=")
        if name not in start:
            sys.exit(f"--start {item}: unknown parameter (one of {', '.join(start)})")
        start[name] = float(value)
    fixed = {}
    for item in args.fix:
        name, _, value = item.partition("=")
        if name not in start:
            sys.exit(f"--fix {item}: unknown parameter (one of {', '.join(start)})")
        fixed[name] = float(value)
    for p in POINTS:
        if p["args"][0] == "cost":
            p["weight"] = args.layer_weight
    bounds = {name: (lo, hi) for name, lo, hi, _ in PARAMETERS}
    free = [name for name, *_ in PARAMETERS if name not in fixed]

    def values_of(x):
        values = dict(fixed)
        values.update({name: from_unit(name, xi, *bounds[name]) for name, xi in zip(free, x)})
        return values

    best = {"loss": float("inf")}

    def objective(x):
        values = values_of(x)
        loss, predicted = ev.loss(values, args.loss == "minimax")
        if loss < best["loss"]:
            best.update(loss=loss, values=values, predicted=predicted)
            print(f"[{ev.count}] new best", file=sys.stderr)
            report(values, loss, predicted, sys.stderr)
        return loss

    x0 = [to_unit(name, start[name], *bounds[name]) for name in free]
    if args.only_report:
        objective(x0)
    else:
        nelder_mead(objective, x0, 0.5, args.evaluations)
    print(f"weight_gradient_passes {args.weight_gradient_passes}, network {args.network}, "
          f"layer form {args.layer_form}, loss {args.loss}, "
          f"{ev.count} evaluations")
    report(best["values"], best["loss"], best["predicted"], sys.stdout)
    shutil.rmtree(ev.dir)


if __name__ == "__main__":
    main()
