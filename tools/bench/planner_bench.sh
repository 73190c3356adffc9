#!/usr/bin/env bash
# Planning time of the TeraPipe slicing DP for each Table-1 setting (tools/data/paper_settings.json)
# at granularity 8 and 1: `terasim plan --pp P --tp T --dp D ... --json` reports plan_time_s, the
# DP alone (model, cluster and cost model loading excluded). Each figure is the best of REPEATS
# runs (default 3); "cpu" is the user CPU time of that whole process (loading included), which
# a busy machine disturbs less than wall time. A benchmark, not a test.
#   tools/bench/planner_bench.sh [path/to/terasim] [REPEATS]
# Targets: the ten numbered settings together under 1 s at g=8 (issue #5); every Table-1
# setting under 1 s at g=1 (issue #12). On a loaded machine compare the cpu columns.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/release/tools/terasim}
repeats=${2:-3}
python3 - "$bin" "$repeats" <<'PY'
import json, resource, subprocess, sys
binary, repeats = sys.argv[1], int(sys.argv[2])
settings = json.load(open("tools/data/paper_settings.json"))
total = {8: 0.0, 1: 0.0}
cpu_total = {8: 0.0, 1: 0.0}

def plan(s, g):
    """Best plan_time_s and best process user CPU seconds over the repeats."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(repeats):
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime
        out = subprocess.run([binary, "plan", "--model", s["model"],
                              "--cluster", f"{settings['cluster']}:{s['instances']}",
                              "--pp", str(s["pp"]), "--tp", str(s["tp"]), "--dp", str(s["dp"]),
                              "--batch", str(s["batch"]), "--granularity", str(g), "--json"],
                             check=True, capture_output=True, text=True).stdout
        cpu = resource.getrusage(resource.RUSAGE_CHILDREN).ru_utime - before
        best = min(best, json.loads(out)["plan_time_s"])
        best_cpu = min(best_cpu, cpu)
    return best, best_cpu

print(f"{'setting':<9} {'model':<14} {'DxPxT':>8} {'g=8 (s)':>9} {'cpu':>7} {'g=1 (s)':>9} {'cpu':>7}")
for s in settings["settings"]:
    row = []
    for g in (8, 1):
        t, cpu = plan(s, g)
        row += [t, cpu]
        if s["setting"].isdigit():
            total[g] += t
            cpu_total[g] += cpu
    print(f"{s['setting']:<9} {s['model']:<14} {s['dp']}x{s['pp']}x{s['tp']:>3} "
          f"{row[0]:>9.3f} {row[1]:>7.3f} {row[2]:>9.3f} {row[3]:>7.3f}")
print(f"ten Table-1 settings together: g=8 {total[8]:.3f} s (cpu {cpu_total[8]:.3f} s), "
      f"g=1 {total[1]:.3f} s (cpu {cpu_total[1]:.3f} s)")
PY
