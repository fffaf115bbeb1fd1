"""Benchmark: marketsim's Dawid–Skene EM against crowd-kit's, on a 1,000,000-label crowd.

For K = 2 and K = 5 this builds the synthetic crowd of ``make_synthetic_labels.py`` (100,000
tasks × 10 labels, 2,000 workers), then

- times the one-off build of the sparse incidence matrices (``LabelSet.incidence`` and
  ``incidence_t``) on a fresh LabelSet, and ``DawidSkene(init="majority", max_iter=20, tol=0)``
  (exactly 20 EM iterations) on the built one — median over ``--repeats`` runs;
- when ``crowdkit`` is importable, times ``crowdkit.aggregation.DawidSkene(n_iter=20,
  tol=-inf)`` on the same labels as a pandas DataFrame, in the same process, interleaved with
  our runs (median over ``--ck-repeats``), and compares the predictions task by task;
- times the whole fit as ``marketsim infer`` runs it once the file is parsed (a LabelSet built
  from the coded arrays, incidence, majority start, 20 iterations, identifiability diagnostic),
  20 iterations and 1 iteration, giving per-iteration and set-up time, and the diagnostic alone;
  crowd-kit's fit over this whole fit is the headline ratio (issue #17);
- measures the peak RSS of ``python -m marketsim infer FILE --method ds --json`` on the written
  1M-label CSV in a fresh subprocess (or, while the ``infer`` command does not exist, of a
  subprocess doing the equivalent library calls: load the CSV, build the LabelSet, fit).

Settings are matched so both implementations compute the same iterates: maximum likelihood (no
smoothing), class prior re-estimated every iteration, start from majority-vote shares, 20
M-steps and 20 E-steps. crowd-kit's ``tol=0`` means "stop as soon as the ELBO does not
increase", which floating-point noise can trigger early, so ``tol=-inf`` is used to force all 20
iterations (checked via ``len(loss_history_)``). Per-iteration time is total fit time / 20 for
both (each includes its own majority-vote start and final bookkeeping).

Run: ``python benchmarks/bench_dawid_skene.py`` (about 2–3 minutes on 2 cores) or ``--quick``.
Side by side with another commit (this script, that commit's marketsim; see compare_commits.py)::

    python benchmarks/compare_commits.py BASE HEAD --bench cmd --metric whole --repeats 5 -- \
        $PWD/benchmarks/bench_dawid_skene.py --classes 2 --no-memory --no-crowdkit --metric whole
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
# With PYTHONPATH set (as benchmarks/compare_commits.py sets it for each checkout), the
# marketsim found there is measured; otherwise this checkout's. marketsim is imported before
# make_synthetic_labels, which puts this checkout first on sys.path.
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import marketsim  # noqa: E402
from marketsim.aggregation import DawidSkene  # noqa: E402
from marketsim.aggregation.identifiability import warn_if_not_identifiable  # noqa: E402
from marketsim.aggregation.metrics import mean_accuracy  # noqa: E402
from marketsim.data.labels import LabelSet  # noqa: E402

MEASURED = Path(marketsim.__file__).parent  # the marketsim under test, printed with the report

from make_synthetic_labels import SyntheticCrowd, make_crowd  # noqa: E402

N_ITER = 20


@dataclass
class Result:
    """Timings and agreement for one K."""

    k: int
    n_labels: int
    build: list[float] = field(default_factory=list)
    ours: list[float] = field(default_factory=list)
    ck: list[float] = field(default_factory=list)
    ck_iters: int | None = None
    agree: float | None = None
    max_proba_diff: float | None = None
    acc_ours: float = float("nan")
    acc_ck: float | None = None
    notes: list[str] = field(default_factory=list)
    whole: list[float] = field(default_factory=list)
    whole_one: list[float] = field(default_factory=list)
    diagnostic: list[float] = field(default_factory=list)

    def per_iter(self) -> float:
        """Seconds per EM iteration of the whole fit: (20-iteration fit - 1-iteration fit) / 19."""
        return (med(self.whole) - med(self.whole_one)) / (N_ITER - 1)

    def setup(self) -> float:
        """Seconds of the whole fit that are not EM iterations (LabelSet, incidence, start,
        diagnostic, bookkeeping): the 1-iteration fit minus one iteration."""
        return med(self.whole_one) - self.per_iter()


def machine() -> str:
    """``nproc`` and CPU model, for the report."""
    model = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} CPUs (nproc), {model}"


def timed(fn: Callable[[], Any]) -> tuple[float, Any]:
    """Wall time of ``fn()`` and its result."""
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def fresh_labelset(crowd: SyntheticCrowd) -> LabelSet:
    """A new LabelSet (no cached incidence) on the crowd's arrays."""
    return LabelSet(
        crowd.tasks, crowd.workers, crowd.labels, crowd.n_tasks, crowd.n_workers, crowd.n_classes
    )


def whole_fit(crowd: SyntheticCrowd, max_iter: int = N_ITER) -> DawidSkene:
    """The fit as ``marketsim infer`` runs it after parsing: a LabelSet built from the coded
    arrays with its id maps (``data/assembly.py``), then ``DawidSkene.fit`` with every warning
    recorded (``cli/infer.py``) — incidence, majority start, EM, identifiability diagnostic."""
    data = LabelSet(
        crowd.tasks, crowd.workers, crowd.labels, crowd.n_tasks, crowd.n_workers,
        crowd.n_classes, task_ids=np.arange(crowd.n_tasks),
        worker_ids=np.arange(crowd.n_workers), class_ids=np.arange(crowd.n_classes),
    )
    est = DawidSkene(init="majority", max_iter=max_iter, tol=0.0, smoothing=0.0)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        est.fit(data)
    return est


def diagnostic_seconds(crowd: SyntheticCrowd) -> float:
    """Wall time of the identifiability diagnostic alone, as ``fit`` calls it at the end (on
    a fitted LabelSet, so the structures the fit built are there)."""
    data = crowd.labelset
    est = DawidSkene(init="majority", max_iter=1, tol=0.0).fit(data)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        t, _ = timed(lambda: warn_if_not_identifiable(data, mean_accuracy(est, data)))
    return t


def build_incidence(data: LabelSet) -> None:
    """Force the one-off sparse matrices the EM kernels use."""
    _ = data.incidence
    _ = data.incidence_t


def crowdkit_available() -> bool:
    """Whether ``crowdkit`` can be imported."""
    return importlib.util.find_spec("crowdkit") is not None


def bench_k(
    k: int, crowd: SyntheticCrowd, repeats: int, ck_repeats: int, use_ck: bool
) -> Result:
    """Time ours (and crowd-kit's) DS on one crowd; compare predictions."""
    res = Result(k=k, n_labels=crowd.n_labels)
    data = fresh_labelset(crowd)
    build_incidence(data)
    DawidSkene(max_iter=2, tol=0).fit(data)  # warm-up (imports, allocator)
    ours: DawidSkene | None = None
    ck_model = None
    df = crowd.to_dataframe() if use_ck else None
    if use_ck:
        from crowdkit.aggregation import DawidSkene as CKDawidSkene
    whole_fit(crowd)  # warm-up
    for r in range(max(repeats, ck_repeats)):
        if r < repeats:
            t, _ = timed(lambda: build_incidence(fresh_labelset(crowd)))
            res.build.append(t)
            est = DawidSkene(init="majority", max_iter=N_ITER, tol=0.0, smoothing=0.0)
            t, ours = timed(lambda est=est: est.fit(data))
            res.ours.append(t)
            t, whole = timed(lambda: whole_fit(crowd))
            res.whole.append(t)
            res.whole_one.append(timed(lambda: whole_fit(crowd, 1))[0])
            res.diagnostic.append(diagnostic_seconds(crowd))
            assert np.array_equal(whole.proba_, ours.proba_)
        if use_ck and r < ck_repeats:
            ck_est = CKDawidSkene(n_iter=N_ITER, tol=-np.inf)
            t, ck_model = timed(lambda ck_est=ck_est: ck_est.fit(df))
            res.ck.append(t)
    assert ours is not None and ours.n_iter_ == N_ITER
    res.acc_ours = float(np.mean(ours.labels_ == crowd.truth))
    if ck_model is not None:
        res.ck_iters = len(ck_model.loss_history_)
        tasks = np.arange(crowd.n_tasks)
        ck_labels = ck_model.labels_.reindex(tasks).to_numpy()
        ck_proba = ck_model.probas_.reindex(index=tasks, columns=list(range(k))).to_numpy()
        res.agree = float(np.mean(ck_labels == ours.labels_))
        res.max_proba_diff = float(np.nanmax(np.abs(ck_proba - ours.proba_)))
        # crowd-kit clips probas_ in place at its _EPS = 1e-10 inside the ELBO computation, so
        # its rows are not renormalised; apply the same clip to ours before comparing again.
        clipped = float(np.nanmax(np.abs(ck_proba - np.maximum(ours.proba_, 1e-10))))
        res.notes.append(f"K={k}: max |Δproba| after clipping ours at 1e-10 like crowd-kit: "
                         f"{clipped:.1e}")
        res.acc_ck = float(np.mean(ck_labels == crowd.truth))
        diff = np.flatnonzero(ck_labels != ours.labels_)
        if diff.size:
            top2 = np.sort(ours.proba_[diff], axis=1)[:, -2:]
            res.notes.append(
                f"K={k}: {diff.size} disagreeing tasks, our top-2 margin median "
                f"{np.median(top2[:, 1] - top2[:, 0]):.2e}"
            )
    return res


MEMORY_SNIPPET = """
import resource, subprocess, sys, time
t0 = time.perf_counter()
proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(proc.returncode, rss, wall)
sys.stderr.write(proc.stderr[-2000:])
"""

LIBRARY_SNIPPET = """
import sys
import pandas as pd
from marketsim.aggregation import DawidSkene
from marketsim.data.labels import LabelSet
df = pd.read_csv(sys.argv[1], dtype="int64")
data = LabelSet.from_arrays(df["task"].to_numpy(), df["worker"].to_numpy(),
                            df["label"].to_numpy())
del df
est = DawidSkene(max_iter=100, tol=1e-7).fit(data)
print(est.n_iter_, est.labels_[:5])
"""


def peak_rss(cmd: list[str]) -> tuple[int, float, float, str]:
    """Run ``cmd`` in a fresh child of a fresh interpreter; return (rc, peak RSS MiB, wall, err)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT),
                                                                   os.environ.get("PYTHONPATH")])))
    proc = subprocess.run(
        [sys.executable, "-c", MEMORY_SNIPPET, *cmd],
        capture_output=True, text=True, env=env, cwd=str(ROOT),
    )
    rc, rss_kib, wall = proc.stdout.split()
    return int(rc), int(rss_kib) / 1024.0, float(wall), proc.stderr


def measure_memory(crowd: SyntheticCrowd, workdir: Path) -> dict[str, Any]:
    """Peak RSS of the ``infer`` command (or of the library calls) on the written CSV."""
    path = crowd.write(workdir / f"synthetic_k{crowd.n_classes}.csv", "csv")
    out: dict[str, Any] = {"file": path.name, "n_labels": crowd.n_labels, "k": crowd.n_classes}
    if (ROOT / "marketsim" / "cli" / "infer.py").exists():
        cmd = [sys.executable, "-m", "marketsim", "infer", str(path), "--method", "ds", "--json"]
        rc, mib, wall, err = peak_rss(cmd)
        out.update(how="python -m marketsim infer FILE --method ds --json", rc=rc,
                   peak_mib=mib, wall=wall)
        if rc == 0:
            return out
        out["error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
    cmd = [sys.executable, "-c", LIBRARY_SNIPPET, str(path)]
    rc, mib, wall, err = peak_rss(cmd)
    out.update(how="library calls (pandas.read_csv + LabelSet + DawidSkene.fit, max_iter=100)",
               rc=rc, peak_mib=mib, wall=wall)
    if rc != 0:
        out["error"] = err.strip().splitlines()[-1] if err.strip() else f"exit {rc}"
    return out


def med(xs: list[float]) -> float:
    """Median, NaN for an empty list."""
    return statistics.median(xs) if xs else float("nan")


def paired(r: Result) -> str:
    """crowd-kit / ours for each interleaved repeat (same moment, same machine load)."""
    pairs = [c / o for c, o in zip(r.ck, r.ours, strict=False)]
    return ", ".join(f"{x:.1f}×" for x in pairs) if pairs else "–"


def report(results: list[Result], memory: list[dict[str, Any]], args: argparse.Namespace) -> str:
    """Markdown table of the results."""
    lines = [
        f"machine: {machine()}; numpy {np.__version__}; python {platform.python_version()}",
        f"data: {args.tasks:,} tasks × {args.per_task} labels, {args.workers:,} workers, "
        f"seed {args.seed}; EM: {N_ITER} iterations, init majority, no smoothing",
        "",
        "ratio / iter = median crowd-kit / median ours; paired ratios: repeat by repeat",
        "",
        "| K | labels | incidence build (s) | ours total (s) | ours / iter (ms) | crowd-kit "
        "total (s) | crowd-kit / iter (ms) | ratio / iter | agreement | max abs Δproba | "
        "accuracy ours / ck | repeats ours / ck | paired ratios |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ours_it = med(r.ours) / N_ITER * 1e3
        ck_it = med(r.ck) / N_ITER * 1e3 if r.ck else float("nan")
        ratio = f"{ck_it / ours_it:.1f}×" if r.ck else "–"
        agree = f"{r.agree:.6f}" if r.agree is not None else "–"
        dproba = f"{r.max_proba_diff:.1e}" if r.max_proba_diff is not None else "–"
        acc_ck = f"{r.acc_ck:.4f}" if r.acc_ck is not None else "–"
        ck_tot = f"{med(r.ck):.2f}" if r.ck else "–"
        ck_iter = f"{ck_it:.1f}" if r.ck else "–"
        lines.append(
            f"| {r.k} | {r.n_labels:,} | {med(r.build):.3f} | {med(r.ours):.3f} | "
            f"{ours_it:.1f} | {ck_tot} | {ck_iter} | {ratio} | {agree} | {dproba} | "
            f"{r.acc_ours:.4f} / {acc_ck} | {len(r.ours)} / {len(r.ck)} | {paired(r)} |"
        )
    lines += [
        "",
        "Whole fit as `infer` runs it (LabelSet from the coded arrays, incidence, majority start, "
        f"{N_ITER} iterations, identifiability diagnostic); ratio = median crowd-kit fit / median "
        "whole fit; per iteration = (20-iteration fit - 1-iteration fit) / 19; set-up = "
        "1-iteration fit - one iteration; diagnostic timed alone on a fitted LabelSet",
        "",
        "| K | whole fit (s) | range (s) | crowd-kit (s) | ratio | paired ratios | set-up (ms) | "
        "per iteration (ms) | diagnostic (ms) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in results:
        ratio = f"{med(r.ck) / med(r.whole):.1f}×" if r.ck else "–"
        pairs = [c / o for c, o in zip(r.ck, r.whole, strict=False)]
        lines.append(
            f"| {r.k} | {med(r.whole):.3f} | {min(r.whole):.3f}–{max(r.whole):.3f} | "
            f"{f'{med(r.ck):.2f}' if r.ck else '–'} | {ratio} | "
            f"{', '.join(f'{x:.1f}×' for x in pairs) or '–'} | {1e3 * r.setup():.1f} | "
            f"{1e3 * r.per_iter():.2f} | {1e3 * med(r.diagnostic):.1f} |"
        )
    for r in results:
        if r.ck_iters is not None and r.ck_iters != N_ITER:
            lines.append(f"\nwarning: crowd-kit ran {r.ck_iters} iterations for K={r.k}")
        lines.extend(f"\nnote: {n}" for n in r.notes)
    if memory:
        lines += ["", "| K | peak RSS (MiB) | wall (s) | measured | status |",
                  "|---|---|---|---|---|"]
        for m in memory:
            status = "ok" if m.get("rc") == 0 else f"failed: {m.get('error', '')}"
            lines.append(
                f"| {m['k']} | {m['peak_mib']:.0f} | {m['wall']:.1f} | {m['how']} | {status} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="smoke run: 10,000 tasks, 200 workers, 2 repeats")
    parser.add_argument("--classes", type=int, nargs="+", default=[2, 5])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--ck-repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--per-task", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-crowdkit", action="store_true")
    parser.add_argument("--no-memory", action="store_true")
    parser.add_argument("--json", type=Path, help="also write the raw timings here")
    parser.add_argument("--metric", choices=("whole", "whole_one", "ours", "diagnostic"),
                        help="also print the median of these timings as a JSON line "
                        "{\"metric\": ..., \"seconds\": ...} (for compare_commits.py --metric)")
    args = parser.parse_args(argv)
    if args.quick:
        args.tasks, args.workers = 10_000, 200
        args.repeats, args.ck_repeats = 2, 2
    use_ck = not args.no_crowdkit and crowdkit_available()
    if not use_ck:
        print("crowd-kit not importable (pip install crowd-kit): comparison skipped",
              file=sys.stderr)

    results: list[Result] = []
    memory: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench_ds_") as tmp:
        for k in args.classes:
            crowd = make_crowd(k, n_tasks=args.tasks, per_task=args.per_task,
                               n_workers=args.workers, seed=args.seed)
            print(f"K={k}: {crowd.n_labels:,} labels ...", file=sys.stderr, flush=True)
            results.append(bench_k(k, crowd, args.repeats, args.ck_repeats, use_ck))
            if not args.no_memory:
                memory.append(measure_memory(crowd, Path(tmp)))
    text = report(results, memory, args)
    print(text)
    print(f"marketsim imported from {MEASURED}")
    if args.metric is not None:
        # the figure benchmarks/compare_commits.py --metric reads (one JSON object per line)
        print(json.dumps({"metric": args.metric, "seconds": med(
            [t for r in results for t in getattr(r, args.metric)])}))
    if args.json is not None:
        args.json.write_text(json.dumps(
            {"machine": machine(), "results": [r.__dict__ for r in results], "memory": memory},
            indent=2, default=float))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
