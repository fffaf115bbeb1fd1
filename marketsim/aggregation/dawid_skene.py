"""Dawid–Skene EM with full per-worker confusion matrices (Dawid & Skene 1979).

E-step ``log q_i(c) = log pi_c + sum_j log C_j[c, z_ij]`` and M-step
``C_j[c, l] ∝ sum_i q_i(c) [z_ij = l] + smoothing`` are both one sparse product with the
task–(worker, class) incidence matrix. Two classes take the log-odds form: the E-step sums
``log C_j[1, z_ij] - log C_j[0, z_ij]`` (one product, not one per class) and the M-step
counts class 0 as each cell's labels minus class 1's (``q(0) = 1 - q(1)``).
``init="spectral"`` is Opt-D&S (Zhang, Chen, Zhou & Jordan 2014): spectral confusion
matrices, then EM.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from marketsim.aggregation._binary_ds_steps import BinarySteps, fits_one_thread
from marketsim.aggregation._numeric import (
    safe_log,
    transposed_product,
    transposed_products,
)
from marketsim.aggregation._threads import one_blas_thread, threads_for
from marketsim.aggregation.base import EMAggregator
from marketsim.aggregation.options import SpectralInitOptions, init_param, param
from marketsim.aggregation.spectral import spectral_confusion
from marketsim.data.labels import LabelSet


def confusion_from_counts(counts: np.ndarray, smoothing: float) -> np.ndarray:
    """Normalise ``counts[j, c, l]`` (+ smoothing) over ``l``; rows without mass become uniform."""
    k = counts.shape[-1]
    smoothed = counts + smoothing
    totals = smoothed.sum(axis=2, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        conf = np.where(totals > 0, smoothed / np.where(totals > 0, totals, 1.0), 1.0 / k)
    return conf


def confusion_counts(data: LabelSet, proba: np.ndarray) -> np.ndarray:
    """``counts[j, c, l] = sum_i q_i(c) [worker j said l on task i]``."""
    k = data.n_classes
    counts = transposed_products(data.incidence, proba, threads_for(data.n_labels))
    return counts.reshape(data.n_workers, k, k).transpose(0, 2, 1)


def binary_confusion_counts(data: LabelSet, proba: np.ndarray) -> np.ndarray:
    """:func:`confusion_counts` for two classes from one sparse product: the class-1 counts
    ``incidence.T @ q(1)``, and the class-0 counts as each (worker, label) cell's number of
    labels minus those (``q(0) = 1 - q(1)``), where the generic form makes a second product."""
    one = transposed_product(data.incidence, proba[:, 1])
    counts = np.empty((one.size, 2))
    np.subtract(data.worker_label_counts.ravel(), one, out=counts[:, 0])
    counts[:, 1] = one
    return counts.reshape(data.n_workers, 2, 2).transpose(0, 2, 1)


def binary_confusion(data: LabelSet, proba: np.ndarray, smoothing: float) -> np.ndarray:
    """``confusion_from_counts(binary_confusion_counts(data, proba), smoothing)`` bit for bit,
    in the same memory layout (``[worker, label, class]``), without numpy's slow loops over
    two-wide axes: the counts stay one ``(n_workers, 4)`` array ``[j, (l, c)]``, whose class
    totals are label 0's plus label 1's (the one addition the sum over labels makes)."""
    counts = binary_confusion_counts(data, proba).transpose(0, 2, 1)  # [j, l, c], a view
    pairs = np.add(counts.reshape(-1, 4), smoothing)
    totals = np.add(pairs[:, :2], pairs[:, 2:])
    totals = np.concatenate([totals, totals], axis=1)  # [j, (l, c)]: each label's class total
    positive = totals > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        pairs = np.where(positive, pairs / np.where(positive, totals, 1.0), 0.5)
    return pairs.reshape(-1, 2, 2).transpose(0, 2, 1)


class ConfusionEM(EMAggregator):
    """The confusion-matrix half shared by Dawid–Skene and its feature variant: smoothed
    confusion M-step, class prior, emission logs, the smoothing prior and ``confusion_``.
    Subclasses declare ``smoothing`` among their parameters."""

    smoothing: float

    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        conf = confusion_from_counts(confusion_counts(data, proba), self.smoothing)
        return {"confusion": conf, "prior": self._estimate_prior(data, proba)}

    def _log_emission(self, data: LabelSet, params: dict[str, np.ndarray]) -> np.ndarray:
        k = data.n_classes
        return safe_log(params["confusion"]).transpose(0, 2, 1).reshape(-1, k)

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:
        if self.smoothing > 0:
            return float(self.smoothing * safe_log(params["confusion"]).sum())
        return 0.0

    def _store(self, params: dict[str, np.ndarray]) -> None:
        self.confusion_ = params["confusion"]


class DawidSkene(ConfusionEM):
    """Dawid–Skene latent-class model with K×K confusion matrices per worker.

    Parameters: :class:`DawidSkene.Options` (``init = "majority"`` is MV-D&S,
    ``"spectral"`` Opt-D&S, which falls back to majority, with a warning, when the moment
    matrices are singular: see :class:`OptDS`).

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 0, 0, 0])
    >>> DawidSkene().fit(data).labels_.tolist()
    [1, 0]
    """

    method = "ds"
    description = "Dawid-Skene EM with full confusion matrices, majority-vote start (MV-D&S)"

    class Options(SpectralInitOptions):
        """Parameters of Dawid-Skene EM."""

        smoothing: float = param(0.0, "pseudo-count added to every confusion cell in the "
                                 "M-step (Jin & Zhang 2010 use 1, Laplace +1/+K); 0 is maximum "
                                 "likelihood", ge=0)
        spectral_delta: float = param(1e-6, "floor on the spectral start's confusion entries "
                                      "before EM (the paper's 1e-6)", ge=0, lt=1)
        spectral_rule: Literal["equivariant", "authors"] = param(
            "equivariant", "the spectral start: one that does not depend on how workers and "
            "classes are numbered (worker groups in a canonical order, power-method starts "
            "from the whitened class directions), or Zhang et al.'s released code (groups by "
            "worker index mod 3, random starts from random_state), with which the published "
            "tables were computed", scenario_unset="")

    smoothing: float
    spectral_delta: float
    spectral_rule: str

    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        if data.n_classes != 2:
            return super()._m_step(data, proba)
        conf = binary_confusion(data, proba, self.smoothing)
        return {"confusion": conf, "prior": self._binary_prior(data, proba)}

    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        """Two classes in log-odds form (:meth:`EMAggregator._binary_e_step`)."""
        return self._binary_e_step(data, params)

    def _em_steps(self, data: LabelSet) -> tuple[
        Callable[[np.ndarray], dict[str, np.ndarray]],
        Callable[[dict[str, np.ndarray]], tuple[np.ndarray, float]],
    ]:
        """Two classes on one thread: the fused steps of :class:`BinarySteps` (the same bits
        in about half the numpy calls: most of a small fit's time is their overhead)."""
        if not fits_one_thread(data):
            return super()._em_steps(data)
        steps = BinarySteps(data, self.smoothing, self._fixed_prior(),
                            lambda params: EMAggregator._e_step(self, data, params))

        def e_step(params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
            proba, loglik = steps.e_step(params)
            return proba, loglik + self._log_param_prior(params)

        return steps.m_step, e_step

    def _init_params(
        self, data: LabelSet, rng: np.random.Generator
    ) -> dict[str, np.ndarray] | None:
        with one_blas_thread():  # small dense solves, SVDs, pseudo-inverses (_threads.py)
            result = spectral_confusion(
                data, rng=rng, delta=self.spectral_delta, rule=self.spectral_rule
            )
        if result is None:
            return None
        conf, prior = result
        fixed = self._fixed_prior()
        return {"confusion": conf, "prior": prior if fixed is None else fixed}


class OptDS(DawidSkene):
    """Opt-D&S (Zhang, Chen, Zhou & Jordan 2014): :class:`DawidSkene` from the spectral
    start."""

    method = "opt-ds"
    description = "Opt-D&S: spectral confusion matrices (Zhang et al. 2014) + Dawid-Skene EM"

    class Options(DawidSkene.Options):
        """Parameters of Opt-D&S."""

        init: Literal["majority", "random", "spectral"] = init_param(  # type: ignore[assignment]
            "spectral")
