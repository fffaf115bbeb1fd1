"""marketsim's MACE against crowd-kit 1.4.2's, side by side, on the Zhang et al. (2014) data.

For each of RTE, Bird, Dog and Web (``<data>/zhang2014/*_crowd.txt``, ``*_truth.txt``, read as in
``agree_crowdkit.py``) both libraries' ``fit_predict`` run on the same ``task, worker, label``
DataFrame with their documented defaults (variational Bayes, 10 restarts, 50 iterations,
Beta(0.5, 0.5) and Dirichlet(10) priors, seed 0), and the script prints accuracy (% of tasks with
a known true label) and fit time (median of ``--repeat`` fits, in seconds) of each, in the same
session.

How crowd-kit runs: in a separate virtual environment (``python -m venv /tmp/ck-mace &&
/tmp/ck-mace/bin/pip install crowd-kit==1.4.2 "pandas<3"``; its interpreter is
``--crowdkit-python``, default ``/tmp/ck-mace/bin/python``), as a subprocess that reads the same
files, times ``crowdkit.aggregation.MACE(...).fit_predict(df)`` (the fit only, not the imports)
and prints its predictions as JSON. Two crowd-kit columns: the data as read, and "renumbered",
worker and label ids replaced by their order of first appearance. crowd-kit 1.4.2 indexes its
per-worker answer distributions by worker and label codes in order of first appearance in the
E-step but stores them from a ``groupby`` (sorted ids) in the M-step; where the two orders
differ (the label order of every data set here, the worker order of Web) strategies land on the
wrong worker or class. Renumbered, the two orders agree.

``--million`` also times, in the same run, a MACE fit and a Dawid–Skene fit (``DawidSkene()``,
the defaults) of the same 1,000,000 synthetic labels (``make_synthetic_labels.make_crowd``:
100,000 tasks × 10 labels, 2,000 workers, K = 2), and prints the ratio.

Run: ``python benchmarks/crowdkit_mace.py [--data DIR] [--mode vb|em] [--million]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agree_crowdkit import read_frames  # noqa: E402
from make_synthetic_labels import make_crowd  # noqa: E402

from marketsim.aggregation import MACE, DawidSkene  # noqa: E402

STEMS = {"RTE": "rte", "Bird": "bluebird", "Dog": "dog", "Web": "web"}

CROWDKIT = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd
from crowdkit.aggregation import MACE
folder, stem, mode, repeat, renumber = sys.argv[1:6]
crowd = np.loadtxt(f"{folder}/{stem}_crowd.txt", dtype=np.int64, ndmin=2)
df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
back = None
if renumber == "1":
    df["worker"] = pd.factorize(df["worker"])[0]
    codes, back = pd.factorize(df["label"])
    df["label"] = codes
times = []
for _ in range(int(repeat)):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        pred = MACE(method=mode).fit_predict(df)
        times.append(time.perf_counter() - t0)
if back is not None:
    pred = pd.Series(np.asarray(back)[pred.to_numpy().astype(int)], index=pred.index)
print(json.dumps({"times": times, "pred": {str(k): int(v) for k, v in pred.items()}}))
"""


def accuracy(pred: pd.Series, truth: pd.Series) -> float:
    common = truth.index.intersection(pred.index)
    return 100.0 * float((pred.loc[common] == truth.loc[common]).mean())


def crowdkit_fit(python: str, folder: Path, stem: str, mode: str, repeat: int,
                 renumber: bool) -> tuple[pd.Series, float]:
    out = subprocess.run([python, "-c", CROWDKIT, str(folder), stem, mode, str(repeat),
                          "1" if renumber else "0"], capture_output=True, text=True, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    pred = pd.Series({int(k): v for k, v in got["pred"].items()})
    return pred, statistics.median(got["times"])


def ours_fit(df: pd.DataFrame, mode: str, repeat: int) -> tuple[pd.Series, float]:
    times = []
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            pred = MACE(method=mode).fit_predict(df)
            times.append(time.perf_counter() - t0)
    return pred, statistics.median(times)


def million(repeat: int) -> None:
    crowd = make_crowd(2)
    data = crowd.labelset
    _ = data.incidence, data.incidence_t  # built once, as the market's incremental fits do
    rows = {}
    for name, make in (("MACE", MACE), ("DawidSkene", DawidSkene)):
        times = []
        for _ in range(repeat):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                t0 = time.perf_counter()
                est = make().fit(data)
                times.append(time.perf_counter() - t0)
        rows[name] = statistics.median(times)
        acc = 100.0 * float(np.mean(est.labels_ == crowd.truth))
        print(f"1M labels, {name:10} fit {rows[name]:8.2f} s  ({est.n_iter_} iterations"
              f"{' of the best start' if name == 'MACE' else ''}), accuracy {acc:.2f} %")
    print(f"MACE / Dawid-Skene fit time: {rows['MACE'] / rows['DawidSkene']:.1f}x")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=Path("/work/shared/data/zhang2014"))
    parser.add_argument("--crowdkit-python", default="/tmp/ck-mace/bin/python")
    parser.add_argument("--mode", choices=("vb", "em"), default="vb")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--million", action="store_true")
    args = parser.parse_args(argv)
    print(f"mode {args.mode}; accuracy %, fit time s (median of {args.repeat})")
    print(f"{'data':5} {'labels':>7} {'ours %':>7} {'ck %':>7} {'ck renum %':>10} "
          f"{'ours s':>8} {'ck s':>8} {'speed-up':>9}")
    for name, stem in STEMS.items():
        df, truth = read_frames(args.data, stem)
        ours, t_ours = ours_fit(df, args.mode, args.repeat)
        theirs, t_ck = crowdkit_fit(args.crowdkit_python, args.data, stem, args.mode,
                                    args.repeat, False)
        renum, _ = crowdkit_fit(args.crowdkit_python, args.data, stem, args.mode, 1, True)
        print(f"{name:5} {len(df):>7} {accuracy(ours, truth):>7.2f} "
              f"{accuracy(theirs, truth):>7.2f} {accuracy(renum, truth):>10.2f} "
              f"{t_ours:>8.3f} {t_ck:>8.2f} {t_ck / t_ours:>8.0f}x")
    if args.million:
        million(args.repeat)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
