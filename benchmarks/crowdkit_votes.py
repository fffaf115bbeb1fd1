"""Wawa, ZeroBasedSkill and M-MSR: marketsim against crowd-kit 1.4.2 on the Zhang et al. data.

For each of RTE, Bird, Dog and Web (``<data>/zhang2014/*_crowd.txt``, ``*_truth.txt``, read as
in ``benchmarks/agree_crowdkit.py``) both libraries' ``fit_predict`` get the same ``task,
worker, label`` DataFrame with the original integer ids, with every method at its defaults
(``wawa``: none; ``zbs``: n_iter=100, lr_init=1, lr_steps_to_reduce=20, lr_reduce_factor=0.5,
eps=1e-5; ``mmsr``: n_iter=10000, tol=1e-10, random_state=0). M-MSR runs on the binary data
sets only (RTE, Bird): ours refuses K > 2.

How crowd-kit runs: in a separate virtual environment, because crowd-kit 1.4.2's ``Wawa`` and
``ZeroBasedSkill`` fail on pandas 3 (marketsim's environment), and all three on
scikit-learn 1.6 or later (``check_is_fitted`` needs ``__sklearn_tags__``)::

    python -m venv /tmp/ck-wawa
    /tmp/ck-wawa/bin/pip install -q crowd-kit==1.4.2 "pandas<3" "scikit-learn<1.6"

This script starts that interpreter (``--crowdkit-python``, default
``/tmp/ck-wawa/bin/python``) as a subprocess on the same machine, right after timing ours, so
both run in the same session; the subprocess prints its accuracies and fit times as JSON.
Times are the best of ``--repeat`` (default 3) ``fit_predict`` calls in the running process
(imports warm; crowd-kit's MMSR fills its matrices with a Python loop over the label rows).

Prints, per data set and method: accuracy (%) on tasks with a known true label for both, and
both fit times. Run: ``python benchmarks/crowdkit_votes.py [DATA_DIR]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agree_crowdkit import read_frames  # noqa: E402

from marketsim.aggregation import MMSR, Wawa, ZeroBasedSkill  # noqa: E402
from marketsim.data.datasets import find_data_dir  # noqa: E402

STEMS = {"RTE": "rte", "Bird": "bluebird", "Dog": "dog", "Web": "web"}
BINARY = ("RTE", "Bird")
OURS = {"wawa": Wawa, "zbs": ZeroBasedSkill, "mmsr": MMSR}

#: Run by the crowd-kit interpreter: argv = data folder, repeats; prints JSON.
CROWDKIT = r"""
import json, sys, time, warnings
import numpy as np, pandas as pd
from crowdkit.aggregation import MMSR, Wawa, ZeroBasedSkill
folder, repeat = sys.argv[1], int(sys.argv[2])
stems = {"RTE": "rte", "Bird": "bluebird", "Dog": "dog", "Web": "web"}
out = {}
for name, stem in stems.items():
    crowd = np.loadtxt(f"{folder}/{stem}_crowd.txt", dtype=np.int64, ndmin=2)
    truth = np.loadtxt(f"{folder}/{stem}_truth.txt", dtype=np.int64, ndmin=2)
    df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
    gt = pd.Series(truth[:, 1], index=truth[:, 0]).groupby(level=0).first()
    methods = {"wawa": Wawa, "zbs": ZeroBasedSkill}
    if name in ("RTE", "Bird"):
        methods["mmsr"] = MMSR
    for method, cls in methods.items():
        best = float("inf")
        for _ in range(repeat):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                start = time.perf_counter()
                pred = cls().fit_predict(df)
                best = min(best, time.perf_counter() - start)
        common = gt.index.intersection(pred.index)
        acc = 100.0 * float((pred.loc[common] == gt.loc[common]).mean())
        out[f"{name}/{method}"] = [acc, best]
print(json.dumps(out))
"""


def ours(folder: Path, repeat: int) -> dict[str, tuple[float, float]]:
    """(accuracy %, best fit time s) per ``data/method`` for marketsim."""
    out = {}
    for name, stem in STEMS.items():
        df, truth = read_frames(folder, stem)
        for method, cls in OURS.items():
            if method == "mmsr" and name not in BINARY:
                continue
            best = float("inf")
            for _ in range(repeat):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    start = time.perf_counter()
                    pred = cls().fit_predict(df)
                    best = min(best, time.perf_counter() - start)
            common = truth.index.intersection(pred.index)
            acc = 100.0 * float((pred.loc[common] == truth.loc[common]).mean())
            out[f"{name}/{method}"] = (acc, best)
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data", nargs="?", type=Path)
    parser.add_argument("--crowdkit-python", default="/tmp/ck-wawa/bin/python")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    folder = args.data or find_data_dir() / "zhang2014"
    mine = ours(folder, args.repeat)
    done = subprocess.run([args.crowdkit_python, "-c", CROWDKIT, str(folder), str(args.repeat)],
                          check=True, capture_output=True, text=True)
    theirs = json.loads(done.stdout.strip().splitlines()[-1])
    print(f"{'data':5} {'method':6} {'marketsim acc %':>16} {'crowd-kit acc %':>16} "
          f"{'diff':>6} {'marketsim s':>12} {'crowd-kit s':>12}")
    for key, (acc, sec) in mine.items():
        name, method = key.split("/")
        ck_acc, ck_sec = theirs[key]
        print(f"{name:5} {method:6} {acc:>16.2f} {ck_acc:>16.2f} {acc - ck_acc:>+6.2f} "
              f"{sec:>12.4f} {ck_sec:>12.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
