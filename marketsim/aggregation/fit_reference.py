"""The classes a calibration is fitted against: each task's class where a truth file gives it,
else the Dawid–Skene posterior of the real labels (fitted once), and the class prior they imply.
``marketsim calibrate`` fits every candidate world, the design curve's references and the model
annotators' fit against these."""

from __future__ import annotations

import numpy as np

from marketsim.aggregation.registry import make_estimator
from marketsim.data.labels import LabelSet


def reference(data: LabelSet, truth: np.ndarray | None
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, str, np.ndarray]:
    """Each task's class distribution (one-hot where the truth is known, else Dawid–Skene's
    posterior; tasks × K), the class prior, each task's reference class, where the
    classes came from and Dawid–Skene's answer on the real labels (fitted once)."""
    est = make_estimator("ds")
    est.fit(data)
    proba = np.asarray(est.proba_)
    weights = proba.copy()
    ref = np.asarray(est.labels_, dtype=np.int64).copy()
    known = np.zeros(data.n_tasks, dtype=bool) if truth is None else truth >= 0
    source = "the Dawid-Skene posterior (no truth file)"
    if known.any():
        assert truth is not None
        weights[known] = np.eye(proba.shape[1])[truth[known]]
        ref[known] = truth[known]
        source = (f"the truth file ({int(known.sum())} of {data.n_tasks} tasks; "
                  "Dawid-Skene's posterior elsewhere)" if not known.all() else "the truth file")
    counts = np.bincount(ref[known], minlength=data.n_classes).astype(np.float64)
    prior = counts + proba[~known].sum(axis=0)
    return weights, prior / prior.sum(), ref, source, np.asarray(est.labels_)
