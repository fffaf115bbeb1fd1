"""Where a big market's memory goes (issue #30): peak bytes per label, seconds per label, and
the arrays and Python containers each part of one unit holds at the end of its run.

    python benchmarks/market_memory.py                       # 1M labels, uniform
    python benchmarks/market_memory.py --labels 1e6 1e7      # the #30 acceptance, side by side
    python benchmarks/market_memory.py --labels 1e6 4e6 --policy entropy-greedy
    python benchmarks/market_memory.py --tree ../main --markdown   # another checkout's code
    python benchmarks/market_memory.py --labels 1e6 1e7 --engine blocks   # the block engine
    python benchmarks/market_memory.py --arrays              # each array: bytes per label, task...

Each size runs in a fresh process: large_market's shape scaled (tasks = labels / 5, workers =
labels / 200, a refresh every labels / 20, warm-started one-coin EM with 10 iterations, no
networkx graph). ``peak`` is the process's high-water RSS (VmHWM: imports, world and policy
included); ``above built`` is that minus its RSS once the market is built; the RSS after the
imports, after the world's draw and once built are printed too. The parts are the
NumPy arrays reachable from the market's attributes (three levels deep) and its bytearrays,
sets and lists (with the ints in them): what the labels make grow. ``--arrays`` lists every
array held at the end one by one, with what its length counts (labels, tasks, workers) and
its bytes per label, task or worker: docs/explanation/performance/memory.md's table of what costs
what. Memory figures do not depend on the machine's load; seconds do, so compare seconds only
within one run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _rss(field: str) -> int:
    """A ``/proc/self/status`` memory field in bytes (VmRSS now, VmHWM the peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _arrays(obj: Any, depth: int, seen: set[int]) -> int:
    """Bytes of the NumPy arrays, bytearrays and sets or lists of ints reachable from ``obj``
    (each counted once)."""
    if id(obj) in seen or depth < 0:
        return 0
    seen.add(id(obj))
    if isinstance(obj, bytearray):
        return sys.getsizeof(obj)
    if isinstance(obj, set | list) and len(obj) > 1000 and isinstance(next(iter(obj)), int):
        return sys.getsizeof(obj) + sum(sys.getsizeof(x) for x in obj)
    if isinstance(obj, np.ndarray):
        base = obj if obj.base is None else obj.base
        if isinstance(base, np.ndarray) and id(base) not in seen:
            seen.add(id(base))
            return int(base.nbytes)
        return int(obj.nbytes) if obj.base is None else 0
    children: list[Any] = []
    if isinstance(obj, dict):
        children = list(obj.values())
    elif isinstance(obj, list | tuple):
        children = list(obj)
    elif hasattr(obj, "__dict__"):
        children = list(vars(obj).values())
    elif hasattr(obj, "__slots__"):
        children = [getattr(obj, s, None) for s in obj.__slots__]
    return sum(_arrays(c, depth - 1, seen) for c in children)


def _held_arrays(obj: Any, path: str, depth: int, seen: set[int]
                 ) -> list[tuple[str, str, int, int]]:
    """``(path, dtype, length, bytes)`` of each NumPy array (a view counts its base, once) and
    bytearray reachable from ``obj``, sparse matrices' parts included."""
    if id(obj) in seen or depth < 0:
        return []
    seen.add(id(obj))
    if isinstance(obj, bytearray):
        return [(path, "bytes", len(obj), len(obj))]
    if isinstance(obj, np.ndarray):
        base = obj.base if isinstance(obj.base, np.ndarray) else obj
        if base is not obj and id(base) in seen:
            return []
        seen.add(id(base))
        return [(path, str(base.dtype), int(base.shape[0]) if base.ndim else 1,
                 int(base.nbytes))]
    names: list[tuple[str, Any]] = []
    if isinstance(obj, dict):
        names = [(f"[{k!r}]", v) for k, v in obj.items()]
    elif hasattr(obj, "tocsr"):  # a scipy sparse matrix
        names = [(f".{a}", getattr(obj, a, None)) for a in ("data", "indices", "indptr")]
    elif isinstance(obj, list | tuple) and len(obj) <= 16:
        names = [(f"[{i}]", v) for i, v in enumerate(obj)]
    elif hasattr(obj, "__dict__"):
        names = [(f".{k}", v) for k, v in vars(obj).items()]
    elif hasattr(obj, "__slots__"):
        names = [(f".{s}", getattr(obj, s, None)) for s in obj.__slots__]
    return [row for name, child in names
            for row in _held_arrays(child, path + name, depth - 1, seen)]


def _per_unit(length: int, labels: int, tasks: int, workers: int) -> str:
    """What an array's length counts: ``label``, ``task`` or ``worker`` (``task`` also for an
    index pointer, one longer), else ``fixed``."""
    return {labels: "label", tasks: "task", tasks + 1: "task", workers: "worker"}.get(
        length, "fixed")


def one_size(labels: int, policy: str, tree: Path = ROOT, engine: str = "events"
             ) -> dict[str, Any]:
    """Run one unit of the scaled market in this process (the package of checkout ``tree``,
    with ``[scenario] engine``); its memory and time figures."""
    sys.path.insert(0, str(tree))
    from marketsim.market.inference import estimator_factory
    from marketsim.market.market import Market
    if engine == "blocks":  # checkouts before the block engine have no such module
        from marketsim.market.block_market import BlockMarket as Market  # noqa: N814
    from marketsim.market.worker_models import draw_world
    from marketsim.policies.registry import make_policy
    from marketsim.scenario.parser import parse_scenario
    from marketsim.study.runner import market_setup
    from marketsim.study.seeds import unit_streams, world_rng

    imported = _rss("VmRSS")
    tasks, workers = labels // 5, max(labels // 200, 10)
    sc = parse_scenario({
        "scenario": {"name": "memory", "seed": 1,
                     **({"engine": engine} if engine != "events" else {})},
        "tasks": {"count": tasks, "prior": [0.75, 0.25]}, "workers": {"count": workers},
        "budget": {"edges": labels, "batch": max(labels // 20, 1)},
        "output": {"graph": False},
        "arms": [{"name": policy, "policy": policy, "inference": {
            "method": "one-coin-shifted-beta", "warm_start": True, "max_iter": 10,
            "tol": 1e-6}}]}, "memory.toml")
    arm = sc.arms[0]
    try:  # as run_unit does (a checkout before it had no such module)
        from marketsim.market.heap import map_big_arrays
        heap = map_big_arrays()
    except ImportError:
        heap = False
    world = draw_world(sc.crowd, world_rng(sc.seed, 0))
    drawn, drawn_peak = _rss("VmRSS"), _rss("VmHWM")
    market = Market(market_setup(sc), world,
                    make_policy(arm.policy.name, arm.policy.options),
                    estimator_factory(sc.crowd, arm.inference), unit_streams(sc.seed, 0, 0),
                    warm_start=True, keep_graph=False)
    built = _rss("VmRSS")
    start, cpu = time.perf_counter(), time.process_time()
    market.run()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    total = _rss("VmHWM")
    peak = total - built
    seen: set[int] = set()
    parts = {name: _arrays(value, 3, seen) for name, value in vars(market).items()}
    parts = {k: v for k, v in sorted(parts.items(), key=lambda kv: -kv[1]) if v > 0}
    arrays: list[tuple[str, str, int, int]] = []
    seen_arrays: set[int] = set()
    for name, value in vars(market).items():
        arrays += _held_arrays(value, name, 5, seen_arrays)
    return {"labels": labels, "tasks": tasks, "workers": workers, "policy": policy,
            "engine": engine,
            "wall_s": wall, "seconds_per_label": wall / labels, "cpu_s": cpu,
            "cpu_seconds_per_label": cpu / labels, "total_peak_bytes": total,
            "imported_bytes": imported, "world_bytes": drawn, "world_peak_bytes": drawn_peak,
            "built_bytes": built, "peak_bytes": peak, "peak_bytes_per_label": peak / labels,
            "total_peak_bytes_per_label": total / labels,
            "held_bytes_per_label": {k: v / labels for k, v in parts.items()},
            "big_arrays_mapped": heap,
            "arrays": [{"path": p, "dtype": d, "length": n, "bytes": b,
                        "per": _per_unit(n, labels, tasks, workers)}
                       for p, d, n, b in arrays if b > 0]}


def array_table(result: dict[str, Any]) -> str:
    """Each array held at the end of one size's run (markdown): its type, what its length
    counts and its bytes per label, task or worker; arrays of a fixed size are left out."""
    rows = ["| array held at the end | type | one per | bytes each |", "|---|---|---|---:|"]
    order = {"label": 0, "task": 1, "worker": 2}
    for a in sorted((a for a in result["arrays"] if a["per"] in order),
                    key=lambda a: (order[a["per"]], a["path"])):
        rows.append(f"| `{a['path']}` | {a['dtype']} | {a['per']} | "
                    f"{a['bytes'] / a['length']:g} |")
    return "\n".join(rows)


def markdown(results: list[dict[str, Any]]) -> str:
    """The docs' table: one column per size, a row per figure and per part held."""
    parts = list(dict.fromkeys(p for r in results for p in r["held_bytes_per_label"]))
    head = "| bytes per label | " + " | ".join(
        f"{r['labels']:,} labels, {r['policy']}" for r in results) + " |"
    rows = [head, "|---|" + "---:|" * len(results)]
    rows.append("| peak RSS of the process (MiB) | " + " | ".join(
        f"{r['total_peak_bytes'] / 2**20:,.0f}" for r in results) + " |")
    for key, what in (("imported_bytes", "RSS after the imports (MiB)"),
                      ("world_bytes", "RSS with the world drawn (MiB)"),
                      ("built_bytes", "RSS with the market built (MiB)")):
        rows.append(f"| {what} | " + " | ".join(
            f"{r[key] / 2**20:,.0f}" if key in r else "–" for r in results) + " |")
    rows.append("| peak above the built market | " + " | ".join(
        f"**{r['peak_bytes_per_label']:.1f}**" for r in results) + " |")
    for part in parts:
        rows.append(f"| held at the end: `{part}` | " + " | ".join(
            f"{r['held_bytes_per_label'].get(part, 0.0):.1f}" for r in results) + " |")
    rows.append("| seconds per label (µs, wall; CPU) | " + " | ".join(
        f"{r['seconds_per_label'] * 1e6:.1f}; {r.get('cpu_seconds_per_label', 0) * 1e6:.1f}"
        for r in results) + " |")
    return "\n".join(rows)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--labels", type=float, nargs="+", default=[1e6])
    p.add_argument("--policy", default="uniform")
    p.add_argument("--engine", choices=["events", "blocks"], default="events",
                   help="[scenario] engine of the market (default: events)")
    p.add_argument("--tree", type=Path, default=ROOT,
                   help="checkout whose marketsim to measure (default: this one)")
    p.add_argument("--markdown", action="store_true", help="also print the docs' table")
    p.add_argument("--arrays", action="store_true",
                   help="also print each array held at the end, per label, task or worker")
    p.add_argument("--json", type=Path, help="write the figures to this file")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        print(json.dumps(one_size(int(args.labels[0]), args.policy, args.tree.resolve(),
                                  args.engine)))
        return
    results = []
    for n in args.labels:
        out = subprocess.run([sys.executable, __file__, "--child", "--labels", str(n),
                              "--policy", args.policy, "--tree", str(args.tree),
                              "--engine", args.engine], check=True,
                             capture_output=True, text=True).stdout
        r = json.loads(out)
        results.append(r)
        print(f"{r['labels']:>11,} labels ({r['tasks']:,} tasks, {r['workers']:,} workers, "
              f"{r['policy']}, {args.engine}): {r['wall_s']:.1f} s = "
              f"{r['seconds_per_label'] * 1e6:.2f} µs/label "
              f"({r['cpu_seconds_per_label'] * 1e6:.2f} µs CPU),"
              f" peak RSS {r['total_peak_bytes'] / 2**20:,.0f} MiB, of which "
              f"{r['peak_bytes'] / 2**20:,.0f} MiB = {r['peak_bytes_per_label']:.1f} bytes/label "
              "above the built market", flush=True)
        print(f"    RSS after the imports {r['imported_bytes'] / 2**20:,.0f} MiB, with the world "
              f"{r['world_bytes'] / 2**20:,.0f} MiB (its draw's peak "
              f"{r['world_peak_bytes'] / 2**20:,.0f}), built {r['built_bytes'] / 2**20:,.0f} MiB;"
              f" big arrays in their own mappings: {r['big_arrays_mapped']}")
        for part, per_label in r["held_bytes_per_label"].items():
            print(f"    {part:<24} {per_label:7.1f} bytes/label held at the end")
    if len(results) > 1:
        first, last = results[0], results[-1]
        print(f"seconds per label, {last['labels']:,} against {first['labels']:,} labels: "
              f"{last['seconds_per_label'] / first['seconds_per_label']:.2f}x wall, "
              f"{last['cpu_seconds_per_label'] / first['cpu_seconds_per_label']:.2f}x CPU "
              "(the process's own CPU time: what the load of other processes changes least)")
    if args.markdown:
        print(markdown(results))
    if args.arrays:
        for r in results:
            print(f"\n{r['labels']:,} labels, {r['tasks']:,} tasks, {r['workers']:,} workers:")
            print(array_table(r))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
