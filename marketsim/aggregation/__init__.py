"""Label aggregation: majority vote, one-coin EM, Dawid–Skene, GLAD, spectral methods, others."""

from marketsim.aggregation._threads import max_threads, set_max_threads
from marketsim.aggregation.bad_annotators import GaussianBadAnnotatorEM, GaussianHardEM
from marketsim.aggregation.base import BaseAggregator, EMAggregator
from marketsim.aggregation.dawid_skene import DawidSkene, OptDS
from marketsim.aggregation.eigen_ratio import EigenRatio
from marketsim.aggregation.estimator import ConvergenceWarning
from marketsim.aggregation.features import DawidSkeneWithFeatures
from marketsim.aggregation.ghosh_svd import GhoshSVD
from marketsim.aggregation.glad import GLAD
from marketsim.aggregation.kos import KOS, KOSSVD
from marketsim.aggregation.mace import MACE
from marketsim.aggregation.majority_vote import MajorityVote, fractional_tie_error
from marketsim.aggregation.metrics import error_rate
from marketsim.aggregation.mmsr import MMSR
from marketsim.aggregation.one_coin import (
    OneCoinBetaEM,
    OneCoinEM,
    OneCoinShiftedBetaEM,
    OneCoinSpectralEM,
)
from marketsim.aggregation.registry import METHODS, make_estimator
from marketsim.aggregation.wawa import Wawa
from marketsim.aggregation.zero_based_skill import ZeroBasedSkill

__all__ = [
    "METHODS",
    "BaseAggregator",
    "ConvergenceWarning",
    "DawidSkene",
    "DawidSkeneWithFeatures",
    "EMAggregator",
    "EigenRatio",
    "GLAD",
    "GaussianBadAnnotatorEM",
    "GaussianHardEM",
    "GhoshSVD",
    "KOS",
    "KOSSVD",
    "MACE",
    "MMSR",
    "MajorityVote",
    "OneCoinBetaEM",
    "OneCoinEM",
    "OneCoinShiftedBetaEM",
    "OneCoinSpectralEM",
    "OptDS",
    "Wawa",
    "ZeroBasedSkill",
    "error_rate",
    "fractional_tie_error",
    "make_estimator",
    "max_threads",
    "set_max_threads",
]
