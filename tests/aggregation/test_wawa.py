"""Wawa: agreement skills, weighted vote, crowd-kit's accuracy on RTE, the estimator API."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from marketsim.aggregation import MajorityVote, Wawa, make_estimator
from marketsim.data.labels import LabelSet
from tests.aggregation._vote_crowds import accuracy, planted, rank_agreement, rte

#: crowd-kit 1.4.2's Wawa on RTE, 92.12 % (benchmarks/crowdkit_votes.py), minus 0.5 points.
RTE_FLOOR = 92.12 - 0.5


def test_skills_recover_the_order_of_planted_accuracies() -> None:
    acc = np.linspace(0.45, 0.95, 12)
    data, _ = planted(list(acc), 600, 3, seed=1, density=0.6)
    est = Wawa().fit(data)
    assert rank_agreement(est.skills_, acc) > 0.9
    assert est.skill_ is est.skills_ and est.weights_ is est.skills_


def test_agreement_with_the_majority_by_hand() -> None:
    data = LabelSet.from_arrays([0, 0, 0, 1, 1, 1], [0, 1, 2, 0, 1, 2], [1, 1, 0, 0, 0, 1])
    est = Wawa().fit(data)
    np.testing.assert_allclose(est.skills_, [1.0, 1.0, 0.0])
    np.testing.assert_allclose(est.proba_, [[0.0, 1.0], [1.0, 0.0]])


def test_beats_majority_when_few_experts_face_many_noisy_workers() -> None:
    data, truth = planted([0.9] * 3 + [0.3] * 12, 400, 3, seed=0)
    mv = MajorityVote(random_state=0).fit(data).labels_
    wawa = Wawa().fit(data).labels_
    assert np.mean(wawa == truth) > np.mean(mv == truth) + 0.05


def test_rte_accuracy_at_least_crowdkit_minus_half_a_point() -> None:
    df, truth = rte()
    assert accuracy(Wawa().fit_predict(df), truth) >= RTE_FLOOR


def test_frames_with_any_ids_and_predict_on_new_labels() -> None:
    pd = pytest.importorskip("pandas")
    df = pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b"], "worker": ["x", "y", "z"] * 2,
                       "label": ["no", "yes", "yes", "no", "no", "yes"]})
    est = Wawa()
    labels = est.fit_predict(df)
    assert labels.to_dict() == {"a": "yes", "b": "no"}
    new = pd.DataFrame({"task": ["c", "c"], "worker": ["x", "z"], "label": ["no", "yes"]})
    proba = est.predict_proba(new)
    assert list(proba.columns) == ["no", "yes"] and proba.index.tolist() == ["c"]
    assert est.predict(new).index.tolist() == ["c"]
    with pytest.raises(ValueError, match="worker 'w'"):
        est.predict(pd.DataFrame({"task": ["c"], "worker": ["w"], "label": ["no"]}))


def test_registry_api_and_determinism() -> None:
    est = make_estimator("wawa")
    assert isinstance(est, Wawa) and est.get_params() == {}
    data, _ = planted([0.8, 0.7, 0.6, 0.9], 50, 4, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a, b = Wawa().fit(data), Wawa().fit(data)
    np.testing.assert_array_equal(a.proba_, b.proba_)
    np.testing.assert_allclose(a.proba_.sum(axis=1), 1.0)
