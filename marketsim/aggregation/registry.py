"""Name → estimator factory for every inference method, as used by the CLI and scenarios, with
the settings each method takes (its ``Options`` model, declared in the estimator's module)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from marketsim.aggregation.bad_annotators import GaussianBadAnnotatorEM, GaussianEMOptions
from marketsim.aggregation.base import BaseAggregator, ScoreAggregator
from marketsim.aggregation.dawid_skene import DawidSkene, OptDSOptions
from marketsim.aggregation.eigen_ratio import EigenRatio
from marketsim.aggregation.features import DawidSkeneWithFeatures
from marketsim.aggregation.ghosh_svd import GhoshSVD
from marketsim.aggregation.glad import GLAD, GLADOptions
from marketsim.aggregation.kos import KOS, KOSSVD, KOSOptions
from marketsim.aggregation.mace import MACE, MACEOptions
from marketsim.aggregation.majority_vote import MajorityVote
from marketsim.aggregation.mmsr import MMSR, MMSROptions
from marketsim.aggregation.one_coin import (
    OneCoinBetaOptions,
    OneCoinEM,
    OneCoinShiftedBetaOptions,
    OneCoinSpectralOptions,
)
from marketsim.aggregation.options import EMOptions
from marketsim.aggregation.wawa import Wawa
from marketsim.aggregation.zero_based_skill import ZeroBasedSkill, ZeroBasedSkillOptions
from marketsim.options import Options


@dataclass(frozen=True)
class MethodSpec:
    """One inference method: its CLI/scenario name, a one-line description, a factory, what
    it estimates (``"classes"``: posteriors ``proba_``/``labels_`` from class labels;
    ``"scores"``: continuous task means ``means_`` from ``LabelSet.scores``) and ``options``,
    the model of the settings it takes (an arm's ``inference`` table besides ``method``:
    types, defaults, ranges, descriptions). Every other setting is refused when a scenario is
    parsed, never silently dropped."""

    name: str
    description: str
    factory: Callable[..., BaseAggregator | ScoreAggregator]
    output: str = "classes"
    options: type[Options] = Options


def _spec(
    name: str,
    description: str,
    factory: Callable[..., BaseAggregator | ScoreAggregator],
    **kw: Any,
) -> None:
    METHODS[name] = MethodSpec(name, description, factory, **kw)


METHODS: dict[str, MethodSpec] = {}
_spec("mv", "majority vote (ties broken at random; tables use fractional ties)", MajorityVote)
_spec("one-coin", "one-coin EM, maximum likelihood", lambda **kw: OneCoinEM(prior=None, **kw),
      options=EMOptions)
_spec("one-coin-beta", "one-coin EM, MAP with a Beta(alpha, beta) ability prior",
      lambda **kw: OneCoinEM(prior="beta", **kw), options=OneCoinBetaOptions)
_spec("one-coin-shifted-beta",
      "one-coin EM, MAP with Maginnis & Gupta's shifted Beta prior "
      "p = low + (1-low) Beta(alpha, beta)",
      lambda **kw: OneCoinEM(prior="shifted-beta", **kw), options=OneCoinShiftedBetaOptions)
_spec("one-coin-spectral", "one-coin spectral initialisation (Zhang et al. Alg. 2) + one-coin EM",
      lambda **kw: OneCoinEM(**{"init": "spectral", **kw}), options=OneCoinSpectralOptions)
_spec("ds", "Dawid-Skene EM with full confusion matrices, majority-vote start (MV-D&S)",
      DawidSkene, options=EMOptions)
_spec("opt-ds", "Opt-D&S: spectral confusion matrices (Zhang et al. 2014) + Dawid-Skene EM",
      lambda **kw: DawidSkene(**{"init": "spectral", **kw}), options=OptDSOptions)
_spec("kos", "Karger-Oh-Shah iterative message passing (K>2 by threshold reduction)", KOS,
      options=KOSOptions)
_spec("kos-svd", "'KOS' as run in Zhang et al.'s code: SVD of the column-centred +-1 matrix",
      KOSSVD)
_spec("ghosh-svd", "Ghosh-Kale-McAfee SVD (K>2 by threshold reduction)", GhoshSVD)
_spec("eigen-ratio", "Dalvi et al.'s EigenRatio (K>2 by threshold reduction)", EigenRatio)
_spec("ds-features",
      "Dawid-Skene EM with naive-Bayes binary task features (Jin & Zhang 2010); features are "
      "passed to fit(data, features=X), without them it is D&S with Laplace smoothing",
      DawidSkeneWithFeatures, options=EMOptions)
_spec("wawa", "Wawa: majority vote, skills = agreement with it, then a skill-weighted vote",
      Wawa)
_spec("zbs", "Zero-Based Skill: weighted vote, skills stepped toward agreement with it from 1/K",
      ZeroBasedSkill, options=ZeroBasedSkillOptions)
_spec("mmsr", "M-MSR (Ma & Olshevsky 2020): robust rank-one completion of worker agreement, "
      "log-odds weighted vote; binary only", MMSR, options=MMSROptions)
_spec("glad", "GLAD (Whitehill et al. 2009): EM with per-worker ability alpha and per-task "
      "inverse difficulty beta, P(right) = sigmoid(alpha * beta)", GLAD, options=GLADOptions)
_spec("mace",
      "MACE (Hovy et al. 2013): each worker spams with probability 1 - theta_j, answering "
      "from their own distribution xi_j; variational Bayes or EM, best of random restarts",
      lambda *, mode="vb", **kw: MACE(method=mode, **kw), options=MACEOptions)


_spec("gaussian-em",
      "Hoiem's bad-annotator EM for continuous scores in [0, 1]: good annotators "
      "N(mu_i, sigma^2), bad ones uniform; estimates task means and P(good) per annotator",
      GaussianBadAnnotatorEM, output="scores", options=GaussianEMOptions)
_spec("gaussian-hard-em",
      "hard EM for Hoiem's bad-annotator model (P(good) rounded to 0/1 each step)",
      lambda **kw: GaussianBadAnnotatorEM(**{"hard": True, **kw}), output="scores",
      options=GaussianEMOptions)

#: Methods that estimate classes from class labels (everything a discrete market can use).
CLASS_METHODS: tuple[str, ...] = tuple(n for n, s in METHODS.items() if s.output == "classes")
#: Methods that estimate continuous task means from scores.
SCORE_METHODS: tuple[str, ...] = tuple(n for n, s in METHODS.items() if s.output == "scores")


def make_estimator(name: str, **params: Any) -> BaseAggregator | ScoreAggregator:
    """Build the estimator called ``name`` with hyperparameters ``params``."""
    try:
        spec = METHODS[name]
    except KeyError:
        raise ValueError(
            f"unknown inference method {name!r}; choose one of: {', '.join(METHODS)}"
        ) from None
    return spec.factory(**params)
