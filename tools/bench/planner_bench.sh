#!/usr/bin/env bash
# Planning time of the TeraPipe slicing DP for each Table-1 setting (tools/data/paper_settings.json)
# at granularity 8 and 1: `terasim plan --pp P --tp T --dp D ... --json` reports plan_time_s, the
# DP alone (model, cluster and cost model loading excluded). A benchmark, not a test.
#   tools/bench/planner_bench.sh [path/to/terasim]
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/release/tools/terasim}
python3 - "$bin" <<'PY'
import json, subprocess, sys
binary = sys.argv[1]
settings = json.load(open("tools/data/paper_settings.json"))
total = {8: 0.0, 1: 0.0}
print(f"{'setting':<9} {'model':<14} {'DxPxT':>8} {'g=8 (s)':>9} {'g=1 (s)':>9}")
for s in settings["settings"]:
    row = []
    for g in (8, 1):
        out = subprocess.run([binary, "plan", "--model", s["model"],
                              "--cluster", f"{settings['cluster']}:{s['instances']}",
                              "--pp", str(s["pp"]), "--tp", str(s["tp"]), "--dp", str(s["dp"]),
                              "--batch", str(s["batch"]), "--granularity", str(g), "--json"],
                             check=True, capture_output=True, text=True).stdout
        t = json.loads(out)["plan_time_s"]
        row.append(t)
        if s["setting"].isdigit():
            total[g] += t
    print(f"{s['setting']:<9} {s['model']:<14} {s['dp']}x{s['pp']}x{s['tp']:>3} {row[0]:>9.3f} {row[1]:>9.3f}")
print(f"ten Table-1 settings together: g=8 {total[8]:.3f} s, g=1 {total[1]:.3f} s")
PY
