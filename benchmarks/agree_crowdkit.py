"""Agreement of marketsim's Dawid–Skene with crowd-kit's on the Zhang et al. (2014) data sets.

For each of Bird, RTE, Dog and Web (``<data>/zhang2014/*_crowd.txt``, ``*_truth.txt``) the
labels are read into a pandas DataFrame with the original integer ids (``task``, ``worker``,
``label``) and given to both libraries' ``fit_predict``:

- ``marketsim.aggregation.DawidSkene(max_iter=100, tol=0)``;
- ``crowdkit.aggregation.DawidSkene(n_iter=100, tol=-inf)``.

What is matched: the model (maximum likelihood, no smoothing, class prior re-estimated each
iteration), the start (majority-vote shares, then an M-step) and the number of iterations: 100
EM iterations for both. crowd-kit's ``tol=-inf`` forces all 100 (its stopping rule compares
successive values of its evidence lower bound, which counts the log prior once per label
rather than once per task and can decrease: with its default ``tol=1e-5`` it stops Bird after
2 iterations, where 1 of 108 tasks is still on the other side). Ours with ``tol=0`` stops
earlier only at an exact fixed point, where more iterations would change nothing.
What differs: crowd-kit clips confusion entries at 1e-10 before normalising, we floor
probabilities at 1e-12 before logs (this moves Web's posteriors by up to a few hundredths after
100 iterations); crowd-kit works in log2, we in natural logs; exact ties between classes go to
the lowest class index in ours and to the first column in crowd-kit's (the same order here,
sorted label values).

Prints, per data set: tasks, agreement % (tasks with the same predicted label), and both error
rates (%) on the tasks with a known true label. Run: ``python benchmarks/agree_crowdkit.py
[DATA_DIR]`` (needs ``pip install "marketsim[bench,pandas]"``; about a minute).
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from marketsim.aggregation import DawidSkene
from marketsim.data.datasets import find_data_dir

STEMS = {"Bird": "bluebird", "RTE": "rte", "Dog": "dog", "Web": "web"}
MAX_ITER = 100


def read_frames(folder: Path, stem: str) -> tuple[pd.DataFrame, pd.Series]:
    """The crowd labels as a DataFrame and the truth as a Series indexed by task id."""
    crowd = np.loadtxt(folder / f"{stem}_crowd.txt", dtype=np.int64, ndmin=2)
    truth = np.loadtxt(folder / f"{stem}_truth.txt", dtype=np.int64, ndmin=2)
    df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
    truth_s = pd.Series(truth[:, 1], index=truth[:, 0]).groupby(level=0).first()
    return df, truth_s


def error(pred: pd.Series, truth: pd.Series) -> float:
    common = truth.index.intersection(pred.index)
    return 100.0 * float((pred.loc[common] != truth.loc[common]).mean())


def main(argv: list[str]) -> int:
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    folder = Path(argv[0]) if argv else find_data_dir() / "zhang2014"
    print(f"{'data':6} {'tasks':>6} {'agree %':>8} {'marketsim err %':>16} "
          f"{'crowd-kit err %':>16}")
    for name, stem in STEMS.items():
        df, truth = read_frames(folder, stem)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = DawidSkene(max_iter=MAX_ITER, tol=0.0).fit_predict(df)
            theirs = CrowdKitDawidSkene(n_iter=MAX_ITER, tol=-np.inf).fit_predict(df)
        theirs = theirs.loc[ours.index]
        agree = 100.0 * float((ours.to_numpy() == theirs.to_numpy()).mean())
        print(f"{name:6} {len(ours):>6} {agree:>8.2f} {error(ours, truth):>16.2f} "
              f"{error(theirs, truth):>16.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
