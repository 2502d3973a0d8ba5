"""Wall time of the `cpu` batch so far, read from the run folders the batch runner wrote (nothing is re-run).
Usage: python bench/bench_batch.py [batch]"""
import json, sys
from pathlib import Path

batch = sys.argv[1] if len(sys.argv) > 1 else "cpu"
runs = Path(__file__).resolve().parents[1] / "repro" / "runs" / batch
if not runs.is_dir():
    print(f"batch {batch!r} has not been run yet ({runs} missing): run `make repro` first"); sys.exit(0)
total = 0.0
for d in sorted(p for p in runs.iterdir() if p.is_dir()):
    prov = json.loads((d / "provenance.json").read_text()) if (d / "provenance.json").is_file() else {}
    runner = prov.get("runner", {})
    cost = json.loads((d / "cost.json").read_text()) if (d / "cost.json").is_file() else {}
    wall = runner.get("wall_s", float("nan")); total += wall if wall == wall else 0.0
    extra = f" (training {sum(cost.get('train_s', {}).values()) / 60:.1f} min, measuring {cost.get('eval_s', 0) / 60:.1f} min)" if cost else ""
    print(f"{batch}/{d.name:28s} {runner.get('status', '?'):7s} {wall / 60:6.1f} min{extra}")
print(f"{batch} batch total: {total / 60:.1f} min of wall time on {prov.get('host', {}).get('cpus', '?')} CPUs")
