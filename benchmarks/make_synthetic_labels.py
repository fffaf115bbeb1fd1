"""Synthetic Dawid–Skene crowd for benchmarks (seeded, vectorised).

Default size: 100,000 tasks × 10 labels each (10 distinct workers per task) from 2,000 workers,
i.e. 1,000,000 labels. Every worker has a random, diagonal-heavy K×K confusion matrix: row ``c``
puts ``d ~ U[0.55, 0.95]`` on the diagonal and spreads ``1 - d`` over the other classes with a flat
Dirichlet. True classes follow a random (mildly unbalanced) prior.

Usage::

    python benchmarks/make_synthetic_labels.py OUT.csv --classes 5            # task,worker,label
    python benchmarks/make_synthetic_labels.py OUT.txt --classes 2 --format zhang

The CSV has a ``task,worker,label`` header and 0-based integer ids; the "zhang" format is the
whitespace-separated, 1-based ``task worker label`` layout of ``../shared/data/zhang2014``.
In-process use: :func:`make_crowd` returns a :class:`SyntheticCrowd` whose ``labelset`` and
``to_dataframe()`` give the same labels.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout, uninstalled

from marketsim.data.labels import LabelSet  # noqa: E402

if TYPE_CHECKING:  # pragma: no cover
    import pandas as pd


@dataclass(frozen=True)
class SyntheticCrowd:
    """Generated labels plus the ground truth that produced them."""

    tasks: np.ndarray
    workers: np.ndarray
    labels: np.ndarray
    truth: np.ndarray
    confusion: np.ndarray
    prior: np.ndarray
    n_tasks: int
    n_workers: int
    n_classes: int

    @property
    def n_labels(self) -> int:
        """Number of labels."""
        return int(self.tasks.shape[0])

    @property
    def labelset(self) -> LabelSet:
        """The labels as a :class:`~marketsim.data.labels.LabelSet` (0-based codes)."""
        return LabelSet(
            self.tasks, self.workers, self.labels, self.n_tasks, self.n_workers, self.n_classes
        )

    def to_dataframe(self) -> pd.DataFrame:
        """``task, worker, label`` DataFrame (int64 columns), as crowd-kit expects."""
        import pandas as pd

        return pd.DataFrame({"task": self.tasks, "worker": self.workers, "label": self.labels})

    def write(self, path: str | Path, fmt: str = "csv") -> Path:
        """Write the labels as ``csv`` (header, 0-based) or ``zhang`` (no header, 1-based)."""
        path = Path(path)
        if fmt == "csv":
            header, offset, sep = "task,worker,label", 0, ","
        elif fmt == "zhang":
            header, offset, sep = "", 1, "\t"
        else:
            raise ValueError(f"fmt must be 'csv' or 'zhang', got {fmt!r}")
        table = np.column_stack([self.tasks, self.workers, self.labels]) + offset
        np.savetxt(path, table, fmt="%d", delimiter=sep, header=header, comments="")
        return path


def random_confusion(
    n_workers: int, n_classes: int, rng: np.random.Generator, low: float = 0.55, high: float = 0.95
) -> np.ndarray:
    """Diagonal-heavy confusion matrices ``C[j, c, l] = P(l | c, j)``, rows summing to 1."""
    k = n_classes
    diag = rng.uniform(low, high, size=(n_workers, k))
    conf = np.empty((n_workers, k, k))
    if k == 1:
        conf[:] = 1.0
        return conf
    off = rng.dirichlet(np.ones(k - 1), size=(n_workers, k))  # (m, k, k-1)
    off *= (1.0 - diag)[:, :, None]
    for c in range(k):
        conf[:, c, c] = diag[:, c]
        conf[:, c, np.arange(k) != c] = off[:, c, :]
    return conf


def distinct_workers(
    n_tasks: int, per_task: int, n_workers: int, rng: np.random.Generator
) -> np.ndarray:
    """``(n_tasks, per_task)`` worker indices, distinct within each row (rejection sampling)."""
    if per_task > n_workers:
        raise ValueError("per_task cannot exceed n_workers")
    assign = rng.integers(0, n_workers, size=(n_tasks, per_task))
    while True:
        srt = np.sort(assign, axis=1)
        bad = np.flatnonzero((srt[:, 1:] == srt[:, :-1]).any(axis=1))
        if bad.size == 0:
            return assign
        assign[bad] = rng.integers(0, n_workers, size=(bad.size, per_task))


def make_crowd(
    n_classes: int = 2,
    *,
    n_tasks: int = 100_000,
    per_task: int = 10,
    n_workers: int = 2_000,
    seed: int = 0,
) -> SyntheticCrowd:
    """Draw a Dawid–Skene crowd (deterministic given ``seed``); labels sorted by task."""
    rng = np.random.default_rng(seed)
    k = int(n_classes)
    prior = rng.dirichlet(np.full(k, 10.0))
    truth = rng.choice(k, size=n_tasks, p=prior)
    conf = random_confusion(n_workers, k, rng)
    workers = distinct_workers(n_tasks, per_task, n_workers, rng).ravel()
    tasks = np.repeat(np.arange(n_tasks, dtype=np.int64), per_task)
    cum = np.cumsum(conf, axis=2)[workers, truth[tasks]]  # (N, k)
    cum[:, -1] = 1.0
    u = rng.random(tasks.shape[0])
    labels = (u[:, None] > cum).sum(axis=1).astype(np.int64)
    return SyntheticCrowd(
        tasks=tasks,
        workers=workers.astype(np.int64),
        labels=labels,
        truth=truth.astype(np.int64),
        confusion=conf,
        prior=prior,
        n_tasks=n_tasks,
        n_workers=n_workers,
        n_classes=k,
    )


def main(argv: list[str] | None = None) -> int:
    """Command line: write a synthetic crowd to a file."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path, help="output file")
    parser.add_argument("--classes", type=int, default=2)
    parser.add_argument("--tasks", type=int, default=100_000)
    parser.add_argument("--per-task", type=int, default=10)
    parser.add_argument("--workers", type=int, default=2_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--format", choices=("csv", "zhang"), default="csv")
    parser.add_argument("--truth", type=Path, help="also write the true classes (task,label)")
    args = parser.parse_args(argv)
    crowd = make_crowd(
        args.classes,
        n_tasks=args.tasks,
        per_task=args.per_task,
        n_workers=args.workers,
        seed=args.seed,
    )
    crowd.write(args.out, args.format)
    if args.truth is not None:
        offset = 1 if args.format == "zhang" else 0
        table = np.column_stack([np.arange(crowd.n_tasks), crowd.truth]) + offset
        header = "" if args.format == "zhang" else "task,label"
        sep = "\t" if args.format == "zhang" else ","
        np.savetxt(args.truth, table, fmt="%d", delimiter=sep, header=header, comments="")
    print(f"wrote {crowd.n_labels:,} labels ({crowd.n_tasks:,} tasks, {crowd.n_workers:,} "
          f"workers, K={crowd.n_classes}) to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
