"""Wall time and peak memory of ``scenarios/platform_scale.toml`` (issue #30), one arm at a
time through the command line, as a user runs it (``--jobs 1``, progress display on unless
``--quiet``).

    python benchmarks/platform_scale.py                      # both arms, 100M labels each
    python benchmarks/platform_scale.py --scale 0.1          # tasks, workers, labels and batch / 10
    python benchmarks/platform_scale.py --arm uniform --scale 0.3 --quiet

``--scale`` shrinks the whole market in proportion (the same labels per task and per worker,
the same number of refreshes), for machines or sessions that cannot spend the full run. Peak
memory is the child process's high-water RSS (``wait4``'s ``ru_maxrss``: the interpreter and its
imports included), CPU its user plus system time (``ru_utime + ru_stime``: what the load of
other processes changes least). Seconds depend on the machine's load; memory does not. The
scenario runs on the block engine (``[scenario] engine = "blocks"``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "scenarios" / "platform_scale.toml"


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return repr(value)


def scaled_scenario(doc: dict[str, Any], arm: str, scale: float) -> str:
    """The scenario's TOML with one arm, its sizes multiplied by ``scale``."""
    doc = json.loads(json.dumps(doc))
    doc["tasks"]["count"] = int(doc["tasks"]["count"] * scale)
    doc["workers"]["count"] = int(doc["workers"]["count"] * scale)
    for key in ("edges", "batch"):
        doc["budget"][key] = int(doc["budget"][key] * scale)
    doc["arms"] = [a for a in doc["arms"] if a["name"] == arm]
    if not doc["arms"]:
        raise SystemExit(f"no arm named {arm!r} in {SCENARIO.name}")
    lines: list[str] = []
    for table, body in doc.items():
        if table == "arms":
            continue
        lines.append(f"[{table}]")
        for key, value in body.items():
            if isinstance(value, dict):
                continue
            lines.append(f"{key} = {_toml_value(value)}")
        for key, value in body.items():
            if isinstance(value, dict):
                lines.append(f"[{table}.{key}]")
                lines += [f"{k} = {_toml_value(v)}" for k, v in value.items()]
    for spec in doc["arms"]:
        lines.append("[[arms]]")
        lines += [f"{k} = {_toml_value(v)}" for k, v in spec.items()]
    return "\n".join(lines) + "\n"


def run_arm(arm: str, scale: float, quiet: bool) -> dict[str, Any]:
    """Run one arm through ``python -m marketsim run``; its wall time and peak RSS."""
    doc = tomllib.loads(SCENARIO.read_text())
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "platform_scale.toml"
        path.write_text(scaled_scenario(doc, arm, scale))
        cmd = [sys.executable, "-m", "marketsim", "run", str(path), "--jobs", "1",
               "--out", str(Path(tmp) / "run")] + (["--quiet"] if quiet else [])
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        if status != 0:
            raise SystemExit(f"{arm}: marketsim run failed with status {status}")
        curves = (next((Path(tmp) / "run").rglob("curves.csv"))).read_text().splitlines()
    labels = int(doc["budget"]["edges"] * scale)
    peak = usage.ru_maxrss * 1024
    return {"arm": arm, "scale": scale, "labels": labels,
            "tasks": int(doc["tasks"]["count"] * scale),
            "workers": int(doc["workers"]["count"] * scale), "wall_s": wall,
            "cpu_s": usage.ru_utime + usage.ru_stime,
            "peak_bytes": peak, "peak_bytes_per_label": peak / labels,
            "final_curve_row": curves[-1]}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--arm", action="append", help="arm to run (default: every arm)")
    p.add_argument("--scale", type=float, default=1.0)
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument("--json", type=Path, help="write the figures to this file")
    args = p.parse_args()
    arms = args.arm or [a["name"] for a in tomllib.loads(SCENARIO.read_text())["arms"]]
    results = []
    for arm in arms:
        r = run_arm(arm, args.scale, args.quiet)
        results.append(r)
        print(f"{arm}: {r['labels']:,} labels ({r['tasks']:,} tasks, {r['workers']:,} workers): "
              f"{r['wall_s']:.0f} s wall, {r['cpu_s']:.0f} s CPU, peak RSS "
              f"{r['peak_bytes'] / 2**30:.2f} GiB = {r['peak_bytes_per_label']:.1f} bytes/label, "
              f"{r['wall_s'] / r['labels'] * 1e6:.2f} µs wall a label", flush=True)
    print(f"all arms: {sum(r['wall_s'] for r in results):.0f} s wall, "
          f"{sum(r['cpu_s'] for r in results):.0f} s CPU; load average at the end "
          f"{os.getloadavg()[0]:.1f}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
