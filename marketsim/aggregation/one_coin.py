"""One-coin EM: each worker is right with probability ``p_j``, else picks a wrong class uniformly.

Three M-steps (Maginnis & Gupta 2015), one class each (its ``prior``):

- :class:`OneCoinEM` (``one-coin``): maximum likelihood, ``p_j = lambda_j``;
- :class:`OneCoinBetaEM` (``one-coin-beta``): MAP with ``p ~ Beta(alpha, beta)``;
- :class:`OneCoinShiftedBetaEM` (``one-coin-shifted-beta``): MAP with ``p = low + (1 - low)
  Beta(alpha, beta)``, whose critical point is the larger root of a quadratic.

and :class:`OneCoinSpectralEM` (``one-coin-spectral``), maximum likelihood from the spectral
start.

``lambda_j`` is the posterior-expected fraction of worker j's labels that are correct.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np

from marketsim.aggregation._numeric import safe_log
from marketsim.aggregation.base import EMAggregator
from marketsim.aggregation.metrics import binary_expected_correct, expected_correct
from marketsim.aggregation.options import SpectralInitOptions, init_param, param
from marketsim.aggregation.spectral import one_coin_spectral_skill
from marketsim.data.labels import LabelSet

#: Abilities are kept inside [EPS, 1 - EPS] so that logs stay finite.
EPS = 1e-6

#: The largest Beta parameter of an ability prior (here and ``[workers.ability]``, whose
#: values it defaults to): the MAP's quadratic stays far from float overflow.
MAX_PRIOR = 1e6


def clip(x: np.ndarray, low: float, high: float) -> np.ndarray:
    """``np.clip(x, low, high)`` for float arrays, the same numbers without its Python
    wrapper (which costs more than the clipping on a few hundred workers, every M-step)."""
    return np.minimum(np.maximum(x, low), high)


def shifted_beta_map(
    n_labels: np.ndarray, lam: np.ndarray, alpha: float, beta: float, low: float
) -> np.ndarray:
    """MAP ability under ``p = low + (1-low) Beta(alpha, beta)``: larger root of
    ``a p^2 + b p + c = 0`` with ``a = -(N+alpha+beta-2)``, ``b = N(lam+low) + (alpha-1) +
    low(beta-1)``, ``c = -low N lam`` (the derivation of Maginnis & Gupta (2015), sign of ``c``
    corrected)."""
    n = np.asarray(n_labels, dtype=np.float64)
    a = -(n + alpha + beta - 2.0)
    b = n * (lam + low) + (alpha - 1.0) + low * (beta - 1.0)
    c = -low * n * lam
    disc = np.maximum(b * b - 4.0 * a * c, 0.0)
    quadratic = np.abs(a) > 1e-12
    if quadratic.all():  # the usual case (alpha + beta > 2): no masks, the same numbers
        quad = (-b - np.sqrt(disc)) / (2.0 * a)  # a < 0: this is the larger root
        if np.isfinite(quad).all():
            return clip(quad, low + EPS, 1.0 - EPS)
    with np.errstate(divide="ignore", invalid="ignore"):
        quad = (-b - np.sqrt(disc)) / (2.0 * a)
        linear = np.where(b != 0, -c / b, lam)
    p = np.where(quadratic, quad, linear)
    p = np.where(np.isfinite(p), p, lam)
    return clip(p, low + EPS, 1.0 - EPS)


def beta_map(
    n_labels: np.ndarray, lam: np.ndarray, alpha: float, beta: float
) -> np.ndarray:
    """MAP ability under ``p ~ Beta(alpha, beta)``: ``(N lam + a - 1)/(N + a + b - 2)``."""
    n = np.asarray(n_labels, dtype=np.float64)
    num = n * lam + alpha - 1.0
    den = n + alpha + beta - 2.0
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(den > 0, num / np.where(den > 0, den, 1.0), lam)
    return clip(p, EPS, 1.0 - EPS)


def one_coin_log_emission(skill: np.ndarray, n_classes: int) -> np.ndarray:
    """``R[(j, l), c] = log p_j`` if ``l == c`` else ``log((1 - p_j)/(K - 1))``."""
    k = n_classes
    log_right = safe_log(skill)
    log_wrong = safe_log((1.0 - skill) / max(k - 1, 1))
    r = np.empty((skill.shape[0], k, k))
    r[...] = log_wrong[:, None, None]
    # log_wrong + (log_right - log_wrong): the bits of the former ``log_wrong + diff * eye``
    r.reshape(-1, k * k)[:, :: k + 1] = log_wrong[:, None] + (log_right - log_wrong)[:, None]
    return r.reshape(-1, k)


class OneCoinEM(EMAggregator):
    """One-coin (symmetric) worker model fitted by EM, maximum likelihood; the subclasses put
    a prior on the abilities (MAP): :class:`OneCoinBetaEM`, :class:`OneCoinShiftedBetaEM`.

    Parameters: :class:`~marketsim.aggregation.options.SpectralInitOptions`; ``init =
    "spectral"`` uses the one-coin spectral initialiser (Zhang et al. Algorithm 2).

    Examples
    --------
    >>> from marketsim.data import LabelSet
    >>> data = LabelSet.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 0, 0, 0])
    >>> OneCoinEM().fit(data).labels_.tolist()
    [1, 0]
    """

    method = "one-coin"
    description = "one-coin EM, maximum likelihood"
    Options = SpectralInitOptions
    #: The prior on the abilities: none (maximum likelihood), Beta or shifted Beta.
    prior: ClassVar[str | None] = None
    alpha: float
    beta: float
    low: float

    def _skill_from_counts(self, correct: np.ndarray, n: np.ndarray) -> np.ndarray:
        # a worker without labels has correct = 0, so lam = 0 there (what the priors read)
        lam = correct / np.maximum(n, 1.0)
        if self.prior == "shifted-beta":
            return shifted_beta_map(n, lam, self.alpha, self.beta, self.low)
        if self.prior == "beta":
            return beta_map(n, lam, self.alpha, self.beta)
        seen = n > 0
        fill = float(correct[seen].sum() / n[seen].sum()) if seen.any() else 0.5
        return clip(np.where(seen, lam, fill), EPS, 1.0 - EPS)

    def _m_step(self, data: LabelSet, proba: np.ndarray) -> dict[str, np.ndarray]:
        if data.n_classes != 2:
            correct, n = expected_correct(data, proba)
            return {"skill": self._skill_from_counts(correct, n),
                    "prior": self._estimate_prior(data, proba)}
        # two classes: the log-odds path's M-step, one product with the class-1 posteriors
        correct = binary_expected_correct(data, proba)
        return {"skill": self._skill_from_counts(correct, data.worker_degree.astype(np.float64)),
                "prior": self._binary_prior(data, proba)}

    def _log_emission(self, data: LabelSet, params: dict[str, np.ndarray]) -> np.ndarray:
        return one_coin_log_emission(params["skill"], data.n_classes)

    def _e_step(self, data: LabelSet, params: dict[str, np.ndarray]) -> tuple[np.ndarray, float]:
        """Two classes in log-odds form (:meth:`EMAggregator._binary_e_step`)."""
        return self._binary_e_step(data, params)

    def _log_param_prior(self, params: dict[str, np.ndarray]) -> float:
        p = params["skill"]
        if self.prior == "beta":
            return float(((self.alpha - 1) * np.log(p) + (self.beta - 1) * np.log1p(-p)).sum())
        if self.prior == "shifted-beta":
            z = np.maximum(p - self.low, EPS)
            return float(((self.alpha - 1) * np.log(z) + (self.beta - 1) * np.log1p(-p)).sum())
        return 0.0

    def _init_params(
        self, data: LabelSet, rng: np.random.Generator  # noqa: ARG002 - deterministic
    ) -> dict[str, np.ndarray] | None:
        skill = one_coin_spectral_skill(data)
        if skill is None:
            return None
        prior = self._fixed_prior()
        if prior is None:
            prior = np.full(data.n_classes, 1.0 / data.n_classes)
        return {"skill": np.clip(skill, EPS, 1 - EPS), "prior": prior}

    def _store(self, params: dict[str, np.ndarray]) -> None:
        self.skill_ = params["skill"]


class OneCoinBetaEM(OneCoinEM):
    """One-coin EM, MAP with ``p ~ Beta(alpha, beta)`` on every worker's ability."""

    method = "one-coin-beta"
    description = "one-coin EM, MAP with a Beta(alpha, beta) ability prior"
    prior = "beta"

    class Options(SpectralInitOptions):
        """Parameters of ``one-coin-beta``."""

        alpha: float = param(6.0, "Beta ability prior", gt=0, le=MAX_PRIOR,
                             scenario_unset="workers.ability.alpha")
        beta: float = param(2.0, "see alpha", gt=0, le=MAX_PRIOR,
                            scenario_unset="workers.ability.beta")


class OneCoinShiftedBetaEM(OneCoinBetaEM):
    """One-coin EM, MAP with Maginnis & Gupta's shifted Beta prior ``p = low + (1 - low)
    Beta(alpha, beta)``."""

    method = "one-coin-shifted-beta"
    description = ("one-coin EM, MAP with Maginnis & Gupta's shifted Beta prior "
                   "p = low + (1-low) Beta(alpha, beta)")
    prior = "shifted-beta"

    class Options(OneCoinBetaEM.Options):
        """Parameters of ``one-coin-shifted-beta``."""

        low: float = param(0.1, "shifted-Beta lower end", ge=0, lt=1,
                           scenario_unset="workers.ability.low")


class OneCoinSpectralEM(OneCoinEM):
    """:class:`OneCoinEM` started from Zhang et al.'s one-coin spectral estimate (Algorithm 2)."""

    method = "one-coin-spectral"
    description = "one-coin spectral initialisation (Zhang et al. Alg. 2) + one-coin EM"

    class Options(SpectralInitOptions):
        """Parameters of ``one-coin-spectral``."""

        init: Literal["majority", "random", "spectral"] = init_param("spectral")
