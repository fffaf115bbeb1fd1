"""crowd-kit's published D_Product accuracies (benchmarks/d_product.py), within ±0.5 points.

The data (Zheng et al. 2017, ``datasets/d_jn-product/answer.csv`` and ``truth.csv`` of
github.com/zhydhkcws/crowd_truth_infer, no license stated) are not vendored: the tests read them
from ``$MARKETSIM_D_PRODUCT``, else ``d_jn-product/`` in ``$MARKETSIM_DATA`` or
``../shared/data``, and are skipped when absent (the fetch command is in the script's
docstring and docs/explanation/infer/mace.md).

MACE is the known miss, ``xfail(strict=True)``: crowd-kit's .929 is not a MACE optimum. Scored
under one objective (``benchmarks/d_product_mace.py``, docs/explanation/infer/mace.md),
crowd-kit's fit has a data log-likelihood thousands of nats below ours: its M-step stores each
worker's answer distribution in sorted-id order and its E-step reads it in order of first
appearance, and the scrambled parameters happen to score D_Product well. MACE run to convergence,
from its random starts, from the true classes or from crowd-kit's answers, ends at 83-85 %.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation import MACE
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.identifiability import NotIdentifiableWarning
from marketsim.aggregation.mace import log_likelihood

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "d_product.py"
spec = importlib.util.spec_from_file_location("d_product", SCRIPT)
assert spec is not None and spec.loader is not None
d_product = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d_product)

TOLERANCE = 0.5  # points, issue #27's acceptance margin
MACE_REASON = (
    "crowd-kit's published .929 is not a MACE optimum: its parameters score thousands of nats "
    "below ours, and MACE converged from the truth gives 84 % (see "
    "docs/explanation/infer/mace.md, D_Product)"
)


_CACHE: dict[str, tuple[object, np.ndarray]] = {}


def data() -> tuple[object, np.ndarray]:
    if "d" not in _CACHE:
        folder = d_product.find_folder()
        if folder is None:
            pytest.skip("D_Product data not found (set MARKETSIM_D_PRODUCT to the folder "
                        "holding answer.csv and truth.csv)")
        _CACHE["d"] = d_product.load(folder)
    return _CACHE["d"]


@pytest.mark.parametrize("method", [
    "mv", "wawa", "ds", "glad",
    pytest.param("mace", marks=pytest.mark.xfail(strict=True, reason=MACE_REASON)),
])
def test_published_accuracy(method: str) -> None:
    labels, truth = data()
    acc, _ = d_product.run(labels, truth, method)
    assert abs(acc - 100 * d_product.PUBLISHED[method]) <= TOLERANCE, acc


@pytest.mark.slow
def test_mace_converges_to_its_optimum_below_the_published_figure() -> None:
    """Our default fit converges (no ConvergenceWarning; at crowd-kit's 50 iterations it did
    not), and MACE's optimum is where it lands: a run started from the true classes climbs
    to no higher objective and to the same accuracy band, far below crowd-kit's .929."""
    labels, truth = data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", NotIdentifiableWarning)
        est = MACE().fit(labels)
        from_truth = MACE().fit(labels, init_proba=np.eye(2)[truth])
    assert est.converged_ and from_truth.converged_
    ours = log_likelihood(labels, est.competence_, est.strategies_)
    best_near_truth = log_likelihood(labels, from_truth.competence_, from_truth.strategies_)
    assert ours >= best_near_truth - 0.001 * labels.n_labels
    for fit in (est, from_truth):
        acc = d_product.accuracy(fit.labels_, truth)
        assert 82.0 <= acc <= 86.0, acc
        assert acc < 100 * d_product.PUBLISHED["mace"] - 5


def test_shape() -> None:
    labels, truth = data()
    assert (labels.n_tasks, labels.n_workers, labels.n_labels) == (8315, 176, 24945)
    assert int(np.sum(truth >= 0)) == 8315 and int(np.sum(truth == 1)) == 1011
