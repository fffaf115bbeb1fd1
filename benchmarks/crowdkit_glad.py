"""marketsim's GLAD against crowd-kit 1.4.2's on the Zhang et al. (2014) data, and its cost
on one million labels against marketsim's own Dawid–Skene.

How crowd-kit runs: in a SEPARATE virtual environment, so that its pinned pandas and
dependencies never meet marketsim's::

    python -m venv /tmp/ck-glad && /tmp/ck-glad/bin/pip install -q crowd-kit==1.4.2 "pandas<3"

This script starts that interpreter (``--crowdkit-python``, default ``$CROWDKIT_PYTHON`` or
``/tmp/ck-glad/bin/python``) as a subprocess running :data:`CROWDKIT_SIDE`, which reads the
same files the same way (``*_crowd.txt``, ``*_truth.txt``: a ``task, worker, label``
DataFrame with the original integer ids), times ``crowdkit.aggregation.GLAD().fit_predict(df)``
with its defaults (``n_iter=100``, ``tol=1e-5``, conjugate-gradient M-step of at most 25
steps, uniform class prior, priors N(1, 1) on alpha and log beta, start alpha = log beta = 1)
and prints accuracy and seconds as JSON. marketsim's ``GLAD().fit_predict(df)`` (its defaults,
the same model, priors and start) is timed in this process, in the same session: the median
of ``--repeats`` fits (crowd-kit: one fit per data set; it takes seconds).

Accuracy is on the tasks with a known true label. ``--million`` also fits
``DawidSkene()`` and ``GLAD()`` alternately on the 1,000,000 synthetic labels of
``make_synthetic_labels.py`` (100,000 tasks x 10 labels, 2,000 workers, K = 2) and reports
the median fit times and their ratio.

Run: ``python benchmarks/crowdkit_glad.py [--data DIR] [--million]`` (a few minutes: crowd-kit
takes ~25 s on Web).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled
sys.path.insert(0, str(Path(__file__).resolve().parent))

from agree_crowdkit import read_frames  # noqa: E402
from make_synthetic_labels import make_crowd  # noqa: E402

from marketsim.aggregation import GLAD, DawidSkene  # noqa: E402
from marketsim.data.labels import LabelSet  # noqa: E402

STEMS = {"RTE": "rte", "Bird": "bluebird", "Dog": "dog", "Web": "web"}

#: What the crowd-kit interpreter runs: argv = data folder, then the file stems.
CROWDKIT_SIDE = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd
from crowdkit.aggregation import GLAD
folder, stems = sys.argv[1], sys.argv[2:]
out = {}
for stem in stems:
    crowd = np.loadtxt(f"{folder}/{stem}_crowd.txt", dtype=np.int64, ndmin=2)
    truth = np.loadtxt(f"{folder}/{stem}_truth.txt", dtype=np.int64, ndmin=2)
    df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
    t = pd.Series(truth[:, 1], index=truth[:, 0]).groupby(level=0).first()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = time.perf_counter()
        pred = GLAD().fit_predict(df)
        seconds = time.perf_counter() - start
    common = t.index.intersection(pred.index)
    out[stem] = {"accuracy": float((pred.loc[common] == t.loc[common]).mean()),
                 "seconds": seconds}
print(json.dumps(out))
"""


def ours(df, truth, repeats: int) -> tuple[float, float]:
    times = []
    for _ in range(repeats):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            start = time.perf_counter()
            pred = GLAD().fit_predict(df)
            times.append(time.perf_counter() - start)
    common = truth.index.intersection(pred.index)
    return float((pred.loc[common] == truth.loc[common]).mean()), statistics.median(times)


def million(repeats: int) -> None:
    crowd = make_crowd(n_classes=2)
    base = crowd.labelset
    times: dict[str, list[float]] = {"ds": [], "glad": []}
    for _ in range(repeats):
        for name, make in (("ds", DawidSkene), ("glad", GLAD)):
            data = LabelSet(base.tasks, base.workers, base.labels, base.n_tasks,
                            base.n_workers, base.n_classes)  # no cached incidence
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                est = make().fit(data)
                times[name].append(time.perf_counter() - start)
            err = float(np.mean(est.labels_ != crowd.truth))
            print(f"  {name:5} {times[name][-1]:7.3f} s  {est.n_iter_:3d} iterations  "
                  f"error {100 * err:.2f} %", flush=True)
    ds, glad = statistics.median(times["ds"]), statistics.median(times["glad"])
    print(f"1M labels (K=2): D&S {ds:.3f} s, GLAD {glad:.3f} s (medians of {repeats}); "
          f"GLAD / D&S = {glad / ds:.1f}x")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path,
                        default=Path(os.environ.get("MARKETSIM_DATA", Path(__file__).resolve()
                                                    .parents[2] / "shared" / "data")))
    parser.add_argument("--crowdkit-python",
                        default=os.environ.get("CROWDKIT_PYTHON", "/tmp/ck-glad/bin/python"))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--million", action="store_true")
    args = parser.parse_args(argv)
    folder = args.data / "zhang2014" if (args.data / "zhang2014").is_dir() else args.data
    ck = json.loads(subprocess.run(
        [args.crowdkit_python, "-c", CROWDKIT_SIDE, str(folder), *STEMS.values()],
        check=True, capture_output=True, text=True).stdout)
    print("| data | labels | crowd-kit acc % | marketsim acc % | crowd-kit fit s "
          "| marketsim fit s | speed-up |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for name, stem in STEMS.items():
        df, truth = read_frames(folder, stem)
        acc, seconds = ours(df, truth, args.repeats)
        theirs = ck[stem]
        print(f"| {name} | {len(df):,} | {100 * theirs['accuracy']:.2f} | {100 * acc:.2f} | "
              f"{theirs['seconds']:.2f} | {seconds:.4f} | {theirs['seconds'] / seconds:.0f}x |",
              flush=True)
    if args.million:
        million(max(args.repeats // 2, 3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
