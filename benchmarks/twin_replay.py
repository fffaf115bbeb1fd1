"""Issue #40, point 4: does a calibrated twin predict what an *adaptive* design gets from the
real crowd? For RTE and Dog, at budgets of 3 and 5 labels per task on average (the files have
10), each policy — uniform, entropy-greedy and the worker-aware explore-exploit, at their
defaults, Dawid–Skene inference — runs

- **replay**: on the real file (``[replay]``: a worker is only given tasks they answered, with
  their real answer), arrivals from a deck of each worker's labels in the file, as the
  twin's are;
- **twin**: on the scenario ``marketsim calibrate --dataset NAME`` writes (its ``[gold]``
  removed: a replay has none, so explore-exploit explores on task labels in both);
- **twin on the real pairs** (diagnosis): the twin's world (a replicate's draw) answers
  exactly the (task, worker) pairs of the real file, and that file is replayed. Against the
  twin it isolates the constraint a replay puts on the policy (a label the file lacks cannot
  be bought); against the replay, the world.

Same seeds, batch and initial graph (one label per task) everywhere; ``--replicates`` units per
cell. The final error (% of tasks, against the truth: the real one, or the twin world's) is
compared; the bound is ±2 points. Prints a markdown table; ``--write`` puts it between its
markers in docs/explanation/models/calibration/replay.md. Run, e.g.::

    MARKETSIM_DATA=/work/shared/data python benchmarks/twin_replay.py --write

Slow: each set is calibrated first (a minute or two; ``--work DIR`` keeps the scenarios and each
cell's errors, reused when there).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import numpy as np

from marketsim.cli import main as marketsim_main
from marketsim.data.datasets import dataset_paths
from marketsim.market.worker_models import draw_world
from marketsim.scenario.parser import parse_scenario
from marketsim.scenario.replay import ReplaySpec, load_replay
from marketsim.scenario.specs import Scenario
from marketsim.study.runner import run_unit
from marketsim.study.seeds import world_rng

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "explanation" / "models" / "calibration" / "replay.md"
BEGIN, END = "<!-- BEGIN twin_replay -->", "<!-- END twin_replay -->"
SETS = ("rte", "dog")
#: Budgets in labels per task on average (the initial label of every task included).
KS = (3, 5)
POLICIES = ("uniform", "entropy-greedy", "explore-exploit")
#: The acceptance's bound in points.
BOUND = 2.0
#: Labels between two refits (``scenarios/replay_rte.toml``'s).
BATCH = 200
ARMS = [{"name": p, "policy": p, "inference": {"method": "ds", "class_prior": "estimate"}}
        for p in POLICIES]


def calibrated(name: str, work: Path, data_dir: str | None) -> Path:
    """The twin ``marketsim calibrate --dataset NAME`` writes (reused when already there)."""
    out = work / f"calibrated_{name}.toml"
    if not out.exists():
        args = ["calibrate", "--dataset", name, "--out", str(out), "--quiet"]
        args += ["--data-dir", data_dir] if data_dir else []
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = marketsim_main(args)
        if code:
            raise SystemExit(f"calibrate --dataset {name} failed with exit code {code}")
    return out


def budget(n_tasks: int, k: int) -> dict[str, Any]:
    """``[budget]`` of k labels per task on average, from one label per task."""
    return {"edges": k * n_tasks, "initial": "one-per-task", "batch": BATCH}


def twin_scenario(path: Path, k: int, replicates: int) -> Scenario:
    """The calibrated twin at ``k`` labels per task with the three policies, without gold."""
    doc = tomllib.loads(path.read_text())
    doc.pop("gold", None)
    doc["scenario"]["replicates"] = replicates
    doc["budget"] = budget(doc["tasks"]["count"], k)
    doc["arms"] = ARMS
    return parse_scenario(doc, str(path))


def replay_scenario(replay: dict[str, Any], seed: int, k: int, replicates: int,
                    source: str) -> Scenario:
    """A replay of ``replay`` (a ``[replay]`` table) at ``k`` labels per task, arrivals from a
    deck of each worker's labels in the file (as the twin's)."""
    data = load_replay(ReplaySpec(**replay))
    counts = np.bincount(data.labels.workers, minlength=data.labels.n_workers)
    doc = {"scenario": {"name": "replay", "seed": seed, "replicates": replicates},
           "replay": replay,
           "workers": {"arrivals": {"weights": counts.tolist(), "order": "deck"}},
           "budget": budget(data.labels.n_tasks, k), "arms": ARMS}
    return parse_scenario(doc, source)


def twin_on_pairs(twin: Scenario, real: dict[str, Any], replicate: int,
                  folder: Path) -> dict[str, Any]:
    """A ``[replay]`` table of the twin's world (replicate ``replicate``'s draw) answering
    exactly the real file's (task, worker) pairs, written to ``folder``."""
    data = load_replay(ReplaySpec(**real)).labels
    world = draw_world(twin.crowd, world_rng(twin.seed, replicate))
    answers = world.model.answers(world, twin.tasks.classes,
                                  np.random.default_rng([twin.seed, replicate, 40]))
    labels = [answers.answer(int(t), int(w))[0]
              for t, w in zip(data.tasks.tolist(), data.workers.tolist(), strict=True)]
    folder.mkdir(parents=True, exist_ok=True)
    # Zero-padded names keep the loader's order of tasks and workers the file's.
    width = len(str(max(data.n_tasks, data.n_workers)))
    rows = [f"t{t:0{width}d},w{w:0{width}d},{z}" for t, w, z in
            zip(data.tasks.tolist(), data.workers.tolist(), labels, strict=True)]
    written("task,worker,label\n" + "\n".join(rows) + "\n", folder / "labels.csv")
    written("task,label\n" + "".join(f"t{t:0{width}d},{int(c)}\n"
                                      for t, c in enumerate(world.truth.tolist())),
            folder / "truth.csv")
    return {"labels": str(folder / "labels.csv"), "truth": str(folder / "truth.csv")}


def written(text: str, path: Path) -> None:
    """Write ``path`` whole at once (a temporary file renamed): cells of the same set run in
    separate processes write the same replicate's pairs, and neither may read half a file."""
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def final_errors(scenario: Scenario, replicates: range) -> np.ndarray:
    """(arms, replicates) final error rates, %, each unit as ``marketsim run`` runs it."""
    return np.array([[100.0 * run_unit(scenario, r, a).rows[-1].error_rate for r in replicates]
                     for a in range(len(scenario.arms))])


def cell(name: str, k: int, work: Path, data_dir: str | None, replicates: int) -> dict[str, Any]:
    """Replay, twin and twin-on-pairs errors (arms × replicates) of one set and budget (kept
    in ``work`` as JSON and reused)."""
    cache = work / f"{name}.k{k}.{replicates}-replicates.batch{BATCH}.json"
    if cache.exists():
        return json.loads(cache.read_text())
    started = time.process_time()
    path = calibrated(name, work, data_dir)
    twin = twin_scenario(path, k, replicates)
    crowd, truth = dataset_paths(name, data_dir)
    real = {"labels": str(crowd), "truth": str(truth), "format": "zhang"}
    reps = range(replicates)
    out: dict[str, Any] = {
        "replay": final_errors(replay_scenario(real, twin.seed, k, replicates, str(path)),
                               reps).tolist(),
        "twin": final_errors(twin, reps).tolist()}
    pairs = []
    for r in reps:  # each replicate's twin world on the real pairs
        table = twin_on_pairs(twin, real, r, work / f"pairs_{name}_{r}")
        sc = replay_scenario(table, twin.seed, k, replicates, str(path))
        pairs.append(final_errors(sc, range(r, r + 1))[:, 0])
    out["pairs"] = np.array(pairs).T.tolist()
    out["cpu_seconds"] = time.process_time() - started
    cache.write_text(json.dumps(out))
    return out


def sem(values: np.ndarray) -> float:
    """Standard error of the mean (0 for one value)."""
    return float(values.std(ddof=1) / np.sqrt(values.size)) if values.size > 1 else 0.0


def spread(values: np.ndarray) -> str:
    """Mean ± standard error of the mean."""
    return f"{values.mean():.2f} ± {sem(values):.2f}"


def table(results: dict[tuple[str, int], dict[str, Any]], replicates: int) -> str:
    """The markdown table of every cell."""
    lines = [f"Final Dawid–Skene error % (mean ± standard error over {replicates} replicates; "
             f"batch {BATCH}, one label per task to start; twin − replay ± the standard error "
             "of the difference, the replay's and the twin's replicates being independent). "
             "*Twin on real pairs*: the twin's world answering only the (task, worker) pairs "
             "of the real file, replayed.",
             "",
             "| set | labels per task | policy | replay | twin | twin − replay | within "
             f"±{BOUND:g} | twin on real pairs |",
             "|---|---|---|---|---|---|---|---|"]
    for (name, k), res in results.items():
        for a, policy in enumerate(POLICIES):
            rep, twin, pairs = (np.asarray(res[key][a]) for key in ("replay", "twin", "pairs"))
            diff = twin.mean() - rep.mean()
            ok = "yes" if abs(diff) <= BOUND else "**no**"
            lines.append(f"| {name} | {k} | {policy} | {spread(rep)} | {spread(twin)} | "
                         f"{diff:+.2f} ± {np.hypot(sem(rep), sem(twin)):.2f} | {ok} | "
                         f"{spread(pairs)} |")
    return "\n".join(lines)


def commit() -> str:
    """The commit the table was measured at (``unknown`` outside git)."""
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                              text=True, check=True, cwd=DOC.parent).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def write(text: str) -> None:
    """Put ``text`` between the markers in :data:`DOC` (the replay page)."""
    doc = DOC.read_text()
    head, rest = doc.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--ks", nargs="+", type=int, default=list(KS))
    parser.add_argument("--replicates", type=int, default=8)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--work", type=Path, default=Path("twin_replay_work"))
    parser.add_argument("--write", action="store_true",
                        help=f"write the table to {DOC.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    results = {}
    for name in args.sets:
        for k in args.ks:
            results[(name, k)] = cell(name, k, args.work, args.data_dir, args.replicates)
            print(f"{name} k={k}: {results[(name, k)]['cpu_seconds']:.0f} s of CPU",
                  file=sys.stderr)
    text = table(results, args.replicates) + f"\n\nMeasured at commit {commit()}."
    print(text)
    if args.write:
        write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
