"""Reproduction of Zhang, Chen, Zhou & Jordan (2014), Tables 3 and 1 (fast parts).

Reads the real data from ``$MARKETSIM_DATA`` or ``<repo>/../shared/data/zhang2014``; skipped
when absent. Known misses are marked ``xfail(strict=True)`` with the measured reason, so they
are reported, and flagged if they start passing. The full tables are printed by
``benchmarks/zhang_tables.py`` (see docs/explanation/reproductions/zhang-2014.md).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from marketsim.aggregation import (
    KOSSVD,
    DawidSkene,
    EigenRatio,
    GhoshSVD,
    error_rate,
    fractional_tie_error,
)
from marketsim.data.labels import LabelSet

try:  # the package loader, when present
    from marketsim.data.zhang import load_zhang as _package_load_zhang
except ImportError:  # pragma: no cover - fallback while the loader is not there
    _package_load_zhang = None

STEMS = {"Bird": "bluebird", "RTE": "rte", "Dog": "dog", "Web": "web"}
PAPER = {  # Table 3, error %
    "Bird": {"opt-ds": 10.09, "ds": 11.11, "mv": 24.07, "kos-svd": 11.11, "ghosh-svd": 27.78,
             "eigen-ratio": 27.78},
    "RTE": {"opt-ds": 7.12, "ds": 7.12, "mv": 10.31, "kos-svd": 39.75, "ghosh-svd": 49.13,
            "eigen-ratio": 9.00},
    "Dog": {"opt-ds": 16.89, "ds": 16.66, "mv": 19.58, "kos-svd": 31.72},
    "Web": {"opt-ds": 15.86, "ds": 15.74, "mv": 26.93, "kos-svd": 42.93},
}
DOG_DATA = (
    "the distributed dog files (109 workers, 8,070 labels) are not the paper's Dog data "
    "(Table 2: 52 workers, 7,354 labels); majority vote gives 17.78% on them, not 19.58%"
)
WEB_CONVERGED = (
    "D&S EM run to convergence on Web gives 17.64% (Opt-D&S) and 17.38% (MV-D&S) against the "
    "paper's 15.86%/15.74%; a port of the authors' released EM loop also ends at 17.1-17.4% / "
    "16.5-16.9%, and the paper's Web numbers are not whole task counts (averages over runs "
    "that the released, deterministic code cannot produce); see "
    "docs/explanation/reproductions/zhang-2014.md"
)


def data_dir() -> Path:
    env = os.environ.get("MARKETSIM_DATA")
    if env:
        path = Path(env)
        return path / "zhang2014" if (path / "zhang2014").is_dir() else path
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "zhang2014"


def _local_load_zhang(crowd: Path, truth: Path) -> tuple[LabelSet, np.ndarray]:
    """Whitespace 1-based ``task worker label`` / ``task label``; truth -1 where unknown."""
    a = np.loadtxt(crowd, dtype=np.int64, ndmin=2)
    b = np.unique(np.loadtxt(truth, dtype=np.int64, ndmin=2), axis=0)
    n = int(max(a[:, 0].max(), b[:, 0].max()))
    k = int(max(a[:, 2].max(), b[:, 1].max()))
    y = np.full(n, -1, dtype=np.int64)
    y[b[:, 0] - 1] = b[:, 1] - 1
    data = LabelSet.from_arrays(a[:, 0] - 1, a[:, 1] - 1, a[:, 2] - 1, n_tasks=n,
                                n_workers=int(a[:, 1].max()), n_classes=k)
    return data, y


_CACHE: dict[str, tuple[LabelSet, np.ndarray]] = {}


def load(name: str) -> tuple[LabelSet, np.ndarray]:
    folder = data_dir()
    if not folder.is_dir():
        pytest.skip(f"reference data not found at {folder} (set MARKETSIM_DATA)")
    if name not in _CACHE:
        crowd, truth = folder / f"{STEMS[name]}_crowd.txt", folder / f"{STEMS[name]}_truth.txt"
        loader = _package_load_zhang or _local_load_zhang
        data, y = loader(crowd, truth)
        _CACHE[name] = (data, np.asarray(y, dtype=np.int64))
    return _CACHE[name]


@pytest.fixture(autouse=True)
def _one_blas_thread():
    with threadpool_limits(1):
        yield


def test_loader_matches_published_sizes() -> None:
    sizes = {"Bird": (108, 39, 2, 4212, 108), "RTE": (800, 164, 2, 8000, 800),
             "Dog": (807, 109, 4, 8070, 807), "Web": (2665, 177, 5, 15567, 2653)}
    for name, expected in sizes.items():
        data, y = load(name)
        got = (data.n_tasks, data.n_workers, data.n_classes, data.n_labels, int((y >= 0).sum()))
        assert got == expected, name


@pytest.mark.parametrize(
    "name",
    ["Bird", "RTE", pytest.param("Dog", marks=pytest.mark.xfail(reason=DOG_DATA, strict=True)),
     "Web"],
)
def test_majority_vote_fractional_ties(name: str) -> None:
    data, y = load(name)
    assert 100 * fractional_tie_error(data.vote_counts(), y) == pytest.approx(
        PAPER[name]["mv"], abs=0.02
    )


def _ds_error(name: str, init: str, protocol: str) -> float:
    data, y = load(name)
    if protocol == "released-code":  # 10 EM iterations, uniform class prior (Nround = 10)
        params = {"max_iter": 10, "tol": 0.0,
                  "class_prior": np.full(data.n_classes, 1.0 / data.n_classes)}
    else:  # EM to convergence, class prior estimated
        params = {"max_iter": 1000, "tol": 1e-7}
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the spectral start must not fall back
        # the authors' spectral rule (index groups, random starts): the published protocol
        est = DawidSkene(init=init, random_state=0, spectral_rule="authors", **params).fit(data)
    assert est.init_used_ == init
    return 100 * error_rate(est.labels_, y)


def _cases(protocol: str) -> list:
    out = []
    for name in STEMS:
        for method, init in (("opt-ds", "spectral"), ("ds", "majority")):
            marks = []
            if name == "Web" and protocol == "converged":
                marks = [pytest.mark.xfail(reason=WEB_CONVERGED, strict=True)]
            out.append(pytest.param(name, method, init, protocol, marks=marks,
                                    id=f"{name}-{method}-{protocol}"))
    return out


@pytest.mark.parametrize(
    ("name", "method", "init", "protocol"), _cases("released-code") + _cases("converged")
)
def test_dawid_skene_within_one_point_or_better(
    name: str, method: str, init: str, protocol: str
) -> None:
    err = _ds_error(name, init, protocol)
    assert err <= PAPER[name][method] + 1.0, f"{err:.2f}% vs paper {PAPER[name][method]}%"


@pytest.mark.parametrize("name", list(STEMS))
def test_kos_svd_matches_paper(name: str) -> None:
    data, y = load(name)
    # Zhang et al.'s code thresholds the 4 Dog / 5 Web classes in file order (K = 2: no effect)
    err = 100 * error_rate(KOSSVD(class_order="given").fit(data).labels_, y)
    assert err == pytest.approx(PAPER[name]["kos-svd"], abs=0.02)


@pytest.mark.parametrize("name", ["Bird", "RTE"])
@pytest.mark.parametrize(("method", "cls"), [("ghosh-svd", GhoshSVD), ("eigen-ratio", EigenRatio)])
def test_binary_baselines_match_paper(name: str, method: str, cls: type) -> None:
    data, y = load(name)
    err = 100 * error_rate(cls().fit(data).labels_, y)
    assert err == pytest.approx(PAPER[name][method], abs=0.02)


def synthetic_crowd(rng: np.random.Generator, p: float, m: int = 100, n: int = 1000):
    """Table 1 crowd: uniform binary truth, diagonal confusion entries iid U[0.3, 0.9]."""
    truth = rng.integers(0, 2, size=n)
    diag = rng.uniform(0.3, 0.9, size=(m, 2))
    ti, wi = np.nonzero(rng.random((n, m)) < p)
    correct = rng.random(ti.size) < diag[wi, truth[ti]]
    labels = np.where(correct, truth[ti], 1 - truth[ti])
    return LabelSet.from_arrays(ti, wi, labels, n_tasks=n, n_workers=m, n_classes=2), truth


def test_table1_p05_fast() -> None:
    """Table 1 at p = 0.5 with 4 repetitions: Opt-D&S 0.84%, MV-D&S 0.84%, MV 7.97%."""
    errs = {"opt-ds": [], "ds": [], "mv": []}
    for child in np.random.SeedSequence(20140).spawn(4):
        rng = np.random.default_rng(child)
        data, truth = synthetic_crowd(rng, 0.5)
        for key, init in (("opt-ds", "spectral"), ("ds", "majority")):
            est = DawidSkene(init=init, max_iter=10, tol=0.0, random_state=rng,
                             spectral_rule="authors").fit(data)
            assert est.init_used_ == init
            errs[key].append(error_rate(est.labels_, truth))
        errs["mv"].append(fractional_tie_error(data.vote_counts(), truth))
    mean = {k: 100 * float(np.mean(v)) for k, v in errs.items()}
    assert mean["opt-ds"] <= 0.84 + 0.5, mean
    assert mean["ds"] <= 0.84 + 0.5, mean
    assert abs(mean["mv"] - 7.97) <= 1.5, mean
