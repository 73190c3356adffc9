#!/usr/bin/env bash
# The two network modes side by side (issue #14, "one network story"): the iteration time of
# every Table-1 setting (tools/data/paper_settings.json; `terasim compare --paper`, GPipe
# without slicing and TeraPipe with the planner's slicing) and of the default compare's winner
# per strategy family (`terasim compare`), under `--network flow` and `--network analytic`,
# and their difference (analytic / flow - 1). A compare row whose configuration differs between
# the modes (each mode picks its own winner) is marked "*". A benchmark, not a test; it exits 1
# when a same-configuration difference exceeds issue #14's 5 %.
#   tools/bench/network_agreement.sh [path/to/terasim] [--quick]
# --quick: the numbered Table-1 settings only, at the planner's granularity 64.
set -euo pipefail
cd "$(dirname "$0")/../.."
bin=${1:-build/release/tools/terasim}
quick=${2:-}
python3 - "$bin" "$quick" <<'PY'
import json, subprocess, sys
binary, quick = sys.argv[1], sys.argv[2] == "--quick"
granularity = "64" if quick else "8"

def run(args):
    out = subprocess.run([binary] + args + ["--json"], check=True, capture_output=True,
                         text=True).stdout
    return json.loads(out)

def paper(mode):
    rows = {}
    settings = json.load(open("tools/data/paper_settings.json"))["settings"]
    for s in settings:
        if quick and not s["setting"].isdigit():
            continue
        for r in run(["compare", "--paper", "--setting", s["setting"], "--network", mode,
                      "--granularity", granularity, "--db", "", "--out", ""]):
            rows[r["setting"]] = r
    return rows

def diff(a, f):
    return f"{100 * (a / f - 1):+7.1f}%"

flow, analytic = paper("flow"), paper("analytic")
print(f"{'setting':<9} {'model':<14} {'DxPxT':>8}  {'schedule':<9} {'flow_s':>9} "
      f"{'analytic_s':>10} {'diff':>8}")
worst = 0.0
for name, f in flow.items():
    a = analytic[name]
    for key, label in (("without_s", "gpipe"), ("with_s", "terapipe")):
        worst = max(worst, abs(a[key] / f[key] - 1))
        print(f"{name:<9} {f['model']:<14} {f['dp']}x{f['pp']}x{f['tp']:<3}  {label:<9} "
              f"{f[key]:>9.3f} {a[key]:>10.3f} {diff(a[key], f[key])}")

def compare(mode):
    doc = run(["compare", "--network", mode, "--db", "", "--out", ""])
    return {r["family"]: r for r in doc["strategies"] if r["found"]}

cf, ca = compare("flow"), compare("analytic")
print()
print(f"{'family':<12} {'DxPxT':>9} {'units':<14} {'flow_s':>9} {'analytic_s':>10} {'diff':>8}")
for family, f in cf.items():
    a = ca.get(family)
    if a is None:
        continue
    same = all(f[k] == a[k] for k in ("dp", "pp", "tp", "units", "slicing", "recipe"))
    worst = max(worst, abs(a["iteration_time_s"] / f["iteration_time_s"] - 1)) if same else worst
    print(f"{family:<12} {f['dp']}x{f['pp']}x{f['tp']:<4} {f['units']:<14} "
          f"{f['iteration_time_s']:>9.3f} {a['iteration_time_s']:>10.3f} "
          f"{diff(a['iteration_time_s'], f['iteration_time_s'])}{'' if same else ' *'}")
print(f"\nlargest difference (same configuration): {100 * worst:.1f}%"
      f" ({'within' if worst <= 0.05 else 'OUTSIDE'} issue #14's 5 %)")
sys.exit(0 if worst <= 0.05 else 1)
PY
