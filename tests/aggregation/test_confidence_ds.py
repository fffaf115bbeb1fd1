"""ds-confidence: a model's repeated answers count once, its per-bin accuracy is learnt from the
humans, and without models it is plain Dawid-Skene."""

from __future__ import annotations

import numpy as np
import pytest

from marketsim.aggregation.confidence_ds import ConfidenceDS, confidence_bins
from marketsim.aggregation.dawid_skene import DawidSkene
from marketsim.aggregation.model_repeats import count_model_answers_once
from marketsim.aggregation.registry import make_estimator
from marketsim.data.compact_labels import CompactLabels
from marketsim.data.labels import LabelSet
from tests.aggregation._mixed_crowd import BIN_ACCURACY, mixed_crowd


def test_a_models_repeated_answer_counts_once_and_a_humans_never() -> None:
    # task 0: model m twice with the same answer (once), model m under a second worker id
    # (same source: once more merged); task 1: m answers 0 and 1 (both kept); human 0 twice
    data = LabelSet(np.array([0, 0, 0, 1, 1, 0, 0]), np.array([1, 1, 2, 1, 1, 0, 0]),
                    np.array([1, 1, 1, 0, 1, 0, 0]), 2, 3, 2,
                    sources=("human", "m", "m"))
    deduped, dropped = count_model_answers_once(data)
    assert dropped == 2 and deduped.n_labels == 5
    assert sorted(zip(deduped.tasks.tolist(), deduped.labels.tolist(),
                      deduped.workers.tolist(), strict=True)) == [
        (0, 0, 0), (0, 0, 0), (0, 1, 1), (1, 0, 1), (1, 1, 1)]
    humans_only = LabelSet(data.tasks, data.workers, data.labels, 2, 3, 2)
    assert count_model_answers_once(humans_only) == (humans_only, 0)


def test_quantile_bins_hold_equal_shares_and_ties_share_a_bin() -> None:
    model = np.array([0] * 8 + [1] * 4)
    conf = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.9, 0.9, 0.95])
    bins = confidence_bins(model, conf, 2, 4, "quantile")
    assert bins[:8].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert bins[8:].tolist() == [0, 0, 0, 3]  # three equal confidences: one bin
    with_nan = confidence_bins(np.zeros(2, dtype=np.int64), np.array([np.nan, 1.0]), 1, 4,
                               "uniform")
    assert with_nan.tolist() == [4, 3]  # no confidence: the extra bin; 1.0: the top bin


@pytest.mark.parametrize("seed", [0, 1])
def test_recovers_the_planted_per_bin_accuracy(seed: int) -> None:
    data, truth, realised = mixed_crowd(seed)
    est = ConfidenceDS(binning="uniform").fit(data)
    assert est.models_ == ("gpt",)
    assert est.bin_labels_[0].tolist()[:4] == np.bincount(
        (data.confidence[-2000:] * 4).astype(int), minlength=4).tolist()
    # about 500 model labels a bin: binomial sd <= 2.2 points; 3 sd
    tolerance = 3 * np.sqrt(0.25 / est.bin_labels_[0, :4])
    assert np.all(np.abs(est.bin_accuracy_[0, :4] - realised) < tolerance)
    assert np.all(np.abs(realised - BIN_ACCURACY) < tolerance)
    assert np.isnan(est.bin_accuracy_[0, 4])  # no label without a confidence
    plain = DawidSkene().fit(count_model_answers_once(data)[0])
    assert np.mean(est.labels_ != truth) < np.mean(plain.labels_ != truth)
    assert est.confusion_.shape == (data.n_workers, 2, 2)


def test_without_models_it_is_dawid_skene() -> None:
    data, _, _ = mixed_crowd(0, n_tasks=300)
    humans = data.subset(data.workers < 30)
    for crowd in (LabelSet(humans.tasks, humans.workers, humans.labels, humans.n_tasks,
                           humans.n_workers, 2), humans):  # no sources; a model, idle
        est, ds = ConfidenceDS().fit(crowd), DawidSkene().fit(crowd)
        np.testing.assert_array_equal(est.proba_, ds.proba_)
        np.testing.assert_array_equal(est.confusion_, ds.confusion_)
        # (a model without labels is stratified into empty cells: sums in another order)
        np.testing.assert_allclose(est.log_likelihood_, ds.log_likelihood_, rtol=1e-13)


def test_a_markets_compact_labels_carry_sources_and_confidence() -> None:
    data, _, _ = mixed_crowd(0, n_tasks=300)
    compact = CompactLabels((data.tasks.astype(np.int32), data.workers.astype(np.int32),
                             data.labels.astype(np.int8)), data.n_tasks, data.n_workers, 2,
                            confidence=data.confidence, sources=data.sources)
    np.testing.assert_array_equal(ConfidenceDS().fit(compact).bin_accuracy_,
                                  ConfidenceDS().fit(data).bin_accuracy_)


def test_registered_for_infer_and_scenarios() -> None:
    est = make_estimator("ds-confidence")
    assert isinstance(est, ConfidenceDS) and est.get_params()["n_bins"] == 4
