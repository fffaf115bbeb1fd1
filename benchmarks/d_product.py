"""crowd-kit's published D_Product figures, reproduced with marketsim's aggregators.

D_Product is the product-matching set of Zheng, Li, Li, Shan & Cheng ("Truth Inference in
Crowdsourcing: Is the Problem Solved?", PVLDB 10(5), 2017): 8,315 binary tasks (do two product
records match? 1,011 yes, 7,304 no), 176 workers, 24,945 answers (3 per task). crowd-kit's
paper (Ustalov et al., "Learning from Crowds with Crowd-Kit") gives, for the methods at their
defaults, accuracy MV .897, Wawa .897, DS .940, GLAD .928, MACE .929; M-MSR "could not process
the dataset in reasonable time" there.

The data are not part of the project (the source repository states no license). Get the two
original files, unchanged::

    git clone --depth 1 https://github.com/zhydhkcws/crowd_truth_infer /tmp/cti
    python benchmarks/d_product.py --data /tmp/cti/datasets

``answer.csv`` is a headed CSV ``question,worker,answer`` (ids are strings such as
``988_1500_0`` and ``A3GVKARKY0E0U9``, answers 0/1), ``truth.csv`` is ``question,truth``; both
are read by marketsim's own ``csv`` format (:func:`marketsim.data.csv_labels.load_csv`), so
``marketsim infer --format csv answer.csv --truth truth.csv`` reads them too.

The folder is ``--data DIR`` (the folder holding the two files, or one holding a
``d_jn-product/`` subfolder, such as the clone's ``datasets/``), else ``$MARKETSIM_D_PRODUCT``,
else ``$MARKETSIM_DATA`` or ``../shared/data`` (as for the Zhang et al. data,
:mod:`marketsim.data.datasets`) with its ``d_jn-product/`` subfolder.

Every method runs ``fit`` on the same :class:`~marketsim.data.labels.LabelSet` with its
defaults; the script prints accuracy (% of the 8,315 tasks), crowd-kit's published figure,
the difference in points, and fit time (best of ``--repeat`` fits, seconds). M-MSR has no
published figure; it runs because the data are binary and 176 workers are far below its
worker limit. ``--mace-em`` adds MACE in EM mode, for comparison.

Run: ``python benchmarks/d_product.py [--data DIR] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from marketsim.aggregation import (  # noqa: E402
    GLAD,
    MACE,
    MMSR,
    DawidSkene,
    MajorityVote,
    Wawa,
    ZeroBasedSkill,
)
from marketsim.data.csv_labels import load_csv  # noqa: E402
from marketsim.data.datasets import data_root  # noqa: E402
from marketsim.data.labels import LabelSet  # noqa: E402
from marketsim.errors import InputError  # noqa: E402

#: Name of the data set's folder in Zheng et al.'s repository (``datasets/d_jn-product``).
FOLDER = "d_jn-product"
ANSWERS, TRUTH = "answer.csv", "truth.csv"
#: Environment variable naming the folder of the two files (beats ``$MARKETSIM_DATA``).
ENV = "MARKETSIM_D_PRODUCT"

#: crowd-kit's published accuracy on D_Product (None: not reported).
PUBLISHED: dict[str, float | None] = {
    "mv": 0.897, "wawa": 0.897, "ds": 0.940, "glad": 0.928, "mace": 0.929,
    "zbs": None, "mmsr": None,
}

METHODS: dict[str, Any] = {
    "mv": MajorityVote, "wawa": Wawa, "ds": DawidSkene, "glad": GLAD, "mace": MACE,
    "zbs": ZeroBasedSkill, "mmsr": MMSR,
}


def find_folder(data: str | Path | None = None) -> Path | None:
    """The folder holding ``answer.csv`` and ``truth.csv``, or None where none is found.

    Looked for in ``data``, else ``$MARKETSIM_D_PRODUCT``, else the reference data folder
    (``$MARKETSIM_DATA``, ``../shared/data``); in each, the folder itself, its ``d_jn-product/``
    and ``datasets/d_jn-product/`` subfolders, and a ``d_jn-product/`` beside it.
    """
    if data is None:
        data = os.environ.get(ENV) or None
    bases = [Path(data)] if data is not None else []
    if data is None:
        root = data_root()
        if root is not None:
            bases.append(root)
    for base in bases:
        for folder in (base, base / FOLDER, base / "datasets" / FOLDER, base.parent / FOLDER):
            if (folder / ANSWERS).is_file() and (folder / TRUTH).is_file():
                return folder
    return None


def load(folder: Path) -> tuple[LabelSet, np.ndarray]:
    """The answers as a LabelSet and the true class index per task (-1 where unknown)."""
    data, truth = load_csv(folder / ANSWERS, folder / TRUTH)
    if truth is None:  # pragma: no cover - load_csv returns truth when given a file
        raise InputError("no truth read", source=str(folder / TRUTH))
    return data, np.asarray(truth)


def accuracy(labels: np.ndarray, truth: np.ndarray) -> float:
    known = truth >= 0
    return 100.0 * float(np.mean(labels[known] == truth[known]))


def run(data: LabelSet, truth: np.ndarray, name: str, repeat: int = 1,
        **params: Any) -> tuple[float, float]:
    """Accuracy (%) and best fit time (s) of method ``name`` at its defaults (or ``params``)."""
    best = float("inf")
    labels = np.empty(0)
    for _ in range(repeat):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t0 = time.perf_counter()
            est = METHODS[name](**params).fit(data)
            best = min(best, time.perf_counter() - t0)
        labels = np.asarray(est.labels_)
    return accuracy(labels, truth), best


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None,
                        help=f"folder holding {ANSWERS} and {TRUTH} (or a {FOLDER}/ subfolder)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--mace-em", action="store_true", help="also MACE(mode='em')")
    args = parser.parse_args(argv)
    folder = find_folder(args.data)
    if folder is None:
        print(f"D_Product data not found ({ANSWERS}, {TRUTH}): pass --data DIR "
              "(see this script's docstring for the fetch command)", file=sys.stderr)
        return 2
    data, truth = load(folder)
    print(f"D_Product from {folder}: {data.n_tasks} tasks, {data.n_workers} workers, "
          f"{data.n_labels} answers, {int(np.sum(truth >= 0))} true labels; "
          f"fit time best of {args.repeat}")
    print(f"{'method':10} {'accuracy %':>10} {'crowd-kit %':>11} {'diff':>6} {'fit s':>8}")
    rows: list[tuple[str, str, dict[str, Any]]] = [(n, n, {}) for n in METHODS]
    if args.mace_em:
        rows.append(("mace (em)", "mace", {"mode": "em"}))
    for label, name, params in rows:
        acc, secs = run(data, truth, name, args.repeat, **params)
        pub = PUBLISHED[name]
        ref = "—" if pub is None else f"{100 * pub:.1f}"
        diff = "" if pub is None else f"{acc - 100 * pub:+.2f}"
        print(f"{label:10} {acc:>10.2f} {ref:>11} {diff:>6} {secs:>8.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
