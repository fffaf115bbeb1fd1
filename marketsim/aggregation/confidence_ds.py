"""Dawid–Skene for a crowd of humans and models: each model's answers stratified by the
confidence it stated, so its calibration is learnt from the humans.

A model's stated confidence says how often it is right only if the model is calibrated, and
language models are often over-confident. Here a model's labels are split by confidence bin and
each (model, bin) is a worker of its own, with its own K x K confusion matrix, in one
Dawid–Skene EM with the human workers (each with their own matrix, as in
:class:`~marketsim.aggregation.dawid_skene.DawidSkene`): the humans' labels pin down the task
posteriors, and those posteriors measure how often the model is right *at each confidence*.
A label of a model without a confidence goes to the model's own no-confidence bin.

**The bins.** By default the quantiles of each model's own confidences (``binning =
"quantile"``, ``n_bins = 4``): every bin of a model holds about the same number of its labels,
so each matrix is learnt from a quarter of them. Fixed edges (``binning = "uniform"``: [0,
1/n), ..., [(n-1)/n, 1]) would leave most bins of an over-confident model empty, its
confidences piled up near 1; four bins keep K x K matrices estimable from a few hundred
labels a model while still separating its sure from its unsure answers. Labels of equal
confidence always share a bin.

**Repeats.** A model's repeated answers are counted once first
(:func:`~marketsim.aggregation.model_repeats.count_model_answers_once`). With no models
(``LabelSet.sources`` absent or all human) the fit is exactly :class:`DawidSkene`'s.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import scipy.sparse as sp

from marketsim.aggregation.base import EMAggregator
from marketsim.aggregation.dawid_skene import DawidSkene
from marketsim.aggregation.model_repeats import count_model_answers_once, source_codes
from marketsim.aggregation.options import param
from marketsim.data.labels import LabelSet


def confidence_bins(
    model: np.ndarray, confidence: np.ndarray, n_models: int, n_bins: int, binning: str
) -> np.ndarray:
    """The bin (0..n_bins-1, or ``n_bins`` for no confidence) of each model label, given its
    model code and confidence. ``quantile``: by the label's rank among its model's finite
    confidences (ties take the rank of their first), ``uniform``: ``floor(conf * n_bins)``."""
    bins = np.full(model.size, n_bins, dtype=np.int64)
    finite = np.flatnonzero(np.isfinite(confidence))
    if finite.size == 0:
        return bins
    conf, owner = confidence[finite], model[finite]
    if binning == "uniform":
        bins[finite] = np.minimum((conf * n_bins).astype(np.int64), n_bins - 1)
        return bins
    order = np.lexsort((conf, owner))
    sorted_owner, sorted_conf = owner[order], conf[order]
    size = np.bincount(owner, minlength=n_models)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    position = np.arange(order.size)
    new_run = np.ones(order.size, dtype=bool)  # a run: one model, one confidence value
    new_run[1:] = (sorted_owner[1:] != sorted_owner[:-1]) | (sorted_conf[1:] != sorted_conf[:-1])
    run_start = np.maximum.accumulate(np.where(new_run, position, 0))
    rank = run_start - start[sorted_owner]
    bins[finite[order]] = rank * n_bins // size[sorted_owner]
    return bins


class ConfidenceDS(DawidSkene):
    """Dawid–Skene in which each model's labels are stratified by confidence bin.

    Parameters: :class:`ConfidenceDS.Options` (those of :class:`DawidSkene` and the bins).
    Fitted, besides DS's: ``models_`` (the models' names, sorted), ``bin_confusion_``
    ``(n_models, n_bins + 1, K, K)`` (the last bin: labels without a confidence),
    ``bin_accuracy_`` ``(n_models, n_bins + 1)`` (``sum_c prior_c C[c, c]``; NaN for an empty
    bin), ``bin_labels_`` (labels per bin) and ``bin_range_`` ``(n_models, n_bins + 1, 2)``
    (each bin's lowest and highest confidence; NaN when empty); ``confusion_`` is per worker,
    a model worker's the label-weighted mean of its bins'.
    """

    method = "ds-confidence"
    description = ("Dawid-Skene for humans and models: each model's answers stratified by its "
                   "confidence bin, its repeated answers counted once")

    class Options(DawidSkene.Options):
        """Parameters of confidence-stratified Dawid-Skene."""

        n_bins: int = param(4, "confidence bins per model (a (model, bin) is one confusion "
                            "matrix); labels without a confidence have a bin of their own",
                            ge=1, le=100)
        binning: Literal["quantile", "uniform"] = param(
            "quantile", "bin edges: the quantiles of each model's own confidences (equal "
            "numbers of labels per bin), or equal widths of [0, 1]")

    n_bins: int
    binning: str

    def fit(  # type: ignore[override]  # the fit parameters EM estimators take
        self,
        data: LabelSet,
        *,
        init_proba: np.ndarray | None = None,
        init_params: dict[str, np.ndarray] | None = None,
        known: np.ndarray | None = None,
    ) -> EMAggregator:
        """Run EM on ``data`` with each (model, confidence bin) a worker of its own. The
        warm starts and ``known`` are DS's (``init_params``: a previous fit's ``params_``,
        whose confusion matrices are per worker, then per (model, bin))."""
        fit_params: dict[str, Any] = {"init_proba": init_proba, "init_params": init_params,
                                      "known": known}
        data, _ = count_model_answers_once(data)
        codes, models = source_codes(data)
        self.models_ = models
        k, n_bins = data.n_classes, self.n_bins
        if not models:
            super().fit(data, **fit_params)
            self._set_bins(np.zeros((0, n_bins + 1), dtype=np.int64),
                           np.full((0, n_bins + 1, 2), np.nan))
            return self
        label_model = codes[data.workers]
        model_rows = np.flatnonzero(label_model >= 0)
        conf = (np.full(model_rows.size, np.nan) if data.confidence is None
                else data.confidence[model_rows])
        bins = confidence_bins(label_model[model_rows], conf, len(models), n_bins, self.binning)
        cell = label_model[model_rows] * (n_bins + 1) + bins  # (model, bin)
        n_cells = len(models) * (n_bins + 1)
        strata = data.workers.copy()
        strata[model_rows] = data.n_workers + cell
        stratified = LabelSet(data.tasks, strata, data.labels, data.n_tasks,
                              data.n_workers + n_cells, k)
        super().fit(stratified, **fit_params)
        cell_conf = self.confusion_[data.n_workers:]
        # each worker's matrix: its own, or the label-weighted mean of its (model, bin) cells
        weights = sp.csr_matrix((np.ones(data.n_labels), (data.workers, strata)),
                                shape=(data.n_workers, stratified.n_workers))
        totals = np.asarray(weights.sum(axis=1)).ravel()
        weights = sp.diags(1.0 / np.maximum(totals, 1.0)) @ weights
        per_worker = (weights @ self.confusion_.reshape(stratified.n_workers, k * k))
        per_worker = per_worker.reshape(data.n_workers, k, k)
        idle = totals == 0
        per_worker[idle] = 1.0 / k
        self.bin_confusion_ = cell_conf.reshape(len(models), n_bins + 1, k, k)
        self.confusion_ = per_worker
        counts = np.bincount(cell, minlength=n_cells).reshape(len(models), n_bins + 1)
        low = np.full(n_cells, np.inf)
        high = np.full(n_cells, -np.inf)
        np.minimum.at(low, cell, np.where(np.isfinite(conf), conf, np.inf))
        np.maximum.at(high, cell, np.where(np.isfinite(conf), conf, -np.inf))
        ranges = np.stack([low, high], axis=1).reshape(len(models), n_bins + 1, 2)
        ranges[~np.isfinite(ranges)] = np.nan
        self._set_bins(counts, ranges)
        return self

    def _set_bins(self, counts: np.ndarray, ranges: np.ndarray) -> None:
        """The per-bin results: labels, confidence range and accuracy of each (model, bin)."""
        k = len(self.prior_)
        if counts.shape[0] == 0:
            self.bin_confusion_ = np.zeros((0, self.n_bins + 1, k, k))
        self.bin_labels_ = counts
        self.bin_range_ = ranges
        diag = np.einsum("mbcc->mbc", self.bin_confusion_)
        self.bin_accuracy_ = np.where(counts > 0, diag @ self.prior_, np.nan)
