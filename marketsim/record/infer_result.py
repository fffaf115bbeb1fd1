"""What ``marketsim infer`` reports about one fit, declared once: :class:`InferResult`, the
object ``infer --json`` prints and the table it shows otherwise read as attributes. The
fields a fit always has come first; the others are set only when they apply (truth given, a
class or a score method, a features file, output files) and are left out of the JSON when not
set, in the order the fields are declared here.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["ConfidenceBin", "InferResult", "SourceAccuracy"]


class SourceAccuracy(BaseModel):
    """One source of a mixed crowd (``human`` or a model): its workers and labels, its accuracy
    as the method states it and, with truth, as measured on it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    workers: int
    labels: int
    estimated_accuracy: float | None
    accuracy_vs_truth: float | None = None


class ConfidenceBin(BaseModel):
    """One (model, confidence bin) of ``ds-confidence``: ``bin`` 1.., or ``none`` for labels
    without a confidence."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    source: str
    bin: int | str
    confidence_min: float | None
    confidence_max: float | None
    labels: int
    estimated_accuracy: float | None


class InferResult(BaseModel):
    """One inference: the method, the files, the sizes, the fit and, with truth, its error."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    method: str
    labels_file: str
    truth_file: str | None
    n_tasks: int
    n_workers: int
    n_labels: int
    #: a class method's classes, a score method's scores
    n_classes: int | None = None
    n_scores: int | None = None
    iterations: int
    converged: bool
    seconds: float
    log_likelihood: float | None
    #: the initialisation an EM method used (``init = "auto"`` picks one)
    init: str | None = None
    #: a score method's fit: the good annotators' noise, P(good), annotators with P(good) > 0.5
    sigma: float | None = None
    pi: float | None = None
    n_good: int | None = None
    #: with truth: the tasks it covers and the error (class: error rate; scores: RMSE)
    n_tasks_with_truth: int | None = None
    error_rate: float | None = None
    error_rate_fractional_ties: float | None = None
    rmse: float | None = None
    rmse_plain_mean: float | None = None
    #: a mixed crowd (a source column): how many of a model's repeated answers counted once
    #: were dropped, each source's accuracy, and ``ds-confidence``'s per (model, bin)
    model_repeats_dropped: int | None = None
    sources: list[SourceAccuracy] | None = None
    confidence_bins: list[ConfidenceBin] | None = None
    load_seconds: float | None = None
    truth_coverage: dict[str, Any] | None = None
    features_file: str | None = None
    n_features: int | None = None
    n_tasks_with_features: int | None = None
    output: str | None = None
    workers_file: str | None = None

    def has(self, name: str) -> bool:
        """Whether the fit reported ``name`` (an error of ``None`` included: no task had
        truth)."""
        return name in self.model_fields_set

    def json_object(self) -> dict[str, Any]:
        """The object ``infer --json`` prints (fields not set left out)."""
        return self.model_dump(mode="json", exclude_unset=True)
