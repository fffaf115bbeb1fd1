"""crowd-kit's published D_Product accuracies (benchmarks/d_product.py), within ±0.5 points.

The data (Zheng et al. 2017, ``datasets/d_jn-product/answer.csv`` and ``truth.csv`` of
github.com/zhydhkcws/crowd_truth_infer, no license stated) are not vendored: the tests read them
from ``$MARKETSIM_D_PRODUCT``, else ``d_jn-product/`` in ``$MARKETSIM_DATA`` or
``../shared/data``, and are skipped when absent (the fetch command is in the script's
docstring and docs/infer.md).

MACE is the known miss, ``xfail(strict=True)``: crowd-kit's .929 is what crowd-kit 1.4.2's MACE
gives on the file as read, where its worker-order mix-up (docs/infer.md, MACE) assigns the
fitted strategies to the wrong workers; with worker ids renumbered in order of first appearance
(no mix-up) crowd-kit gives 81.62 %, and ours 81.98 %.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "d_product.py"
spec = importlib.util.spec_from_file_location("d_product", SCRIPT)
assert spec is not None and spec.loader is not None
d_product = importlib.util.module_from_spec(spec)
spec.loader.exec_module(d_product)

TOLERANCE = 0.5  # points, issue #27's acceptance margin
MACE_REASON = (
    "crowd-kit's published .929 comes from its MACE's worker-order mix-up; without it "
    "crowd-kit 1.4.2 gives 81.62 % (see docs/infer.md, D_Product)"
)
#: crowd-kit 1.4.2's MACE (VB, defaults) with worker ids renumbered by first appearance.
CROWDKIT_MACE_RENUMBERED = 81.62

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


def test_mace_matches_crowdkit_without_its_worker_mixup() -> None:
    labels, truth = data()
    acc, _ = d_product.run(labels, truth, "mace")
    assert abs(acc - CROWDKIT_MACE_RENUMBERED) <= TOLERANCE, acc


def test_shape() -> None:
    labels, truth = data()
    assert (labels.n_tasks, labels.n_workers, labels.n_labels) == (8315, 176, 24945)
    assert int(np.sum(truth >= 0)) == 8315 and int(np.sum(truth == 1)) == 1011
