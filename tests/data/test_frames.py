"""crowd-kit-style DataFrame API (#15 item 2): ``fit_predict(df)``/``fit_predict_proba(df)`` on
any hashable ids and label values, ``LabelSet.from_frame``/``from_records``, pandas optional."""

from __future__ import annotations

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from marketsim.aggregation import DawidSkene
from marketsim.aggregation.registry import CLASS_METHODS, make_estimator
from marketsim.data.frames import PANDAS_HINT
from marketsim.data.labels import LabelSet

YES_NO = pd.DataFrame({
    "task": ["q1", "q1", "q1", "q2", "q2", "q2", "q3", "q3", "q3", "q4", "q4"],
    "worker": ["ann", "bob", "cy", "ann", "bob", "cy", "ann", "bob", "cy", "ann", "cy"],
    "label": ["yes", "yes", "no", "no", "no", "no", "yes", "yes", "yes", "no", "no"],
})


def test_dawid_skene_fit_predict_on_string_ids_and_yes_no_labels() -> None:
    out = DawidSkene().fit_predict(YES_NO)
    assert isinstance(out, pd.Series)
    assert out.name == "agg_label" and out.index.name == "task"
    assert out.to_dict() == {"q1": "yes", "q2": "no", "q3": "yes", "q4": "no"}


def test_fit_predict_proba_columns_are_label_values() -> None:
    proba = DawidSkene().fit_predict_proba(YES_NO)
    assert isinstance(proba, pd.DataFrame)
    assert list(proba.columns) == ["no", "yes"] and proba.index.name == "task"
    assert list(proba.index) == ["q1", "q2", "q3", "q4"]
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert proba.idxmax(axis=1).to_dict() == DawidSkene().fit_predict(YES_NO).to_dict()


@pytest.mark.parametrize("name", CLASS_METHODS)
def test_every_class_method_takes_a_frame(name: str) -> None:
    est = make_estimator(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        labels = est.fit_predict(YES_NO)
        proba = make_estimator(name).fit_predict_proba(YES_NO)
    assert list(labels.index) == ["q1", "q2", "q3", "q4"]
    assert set(labels) <= {"yes", "no"}
    assert list(proba.columns) == ["no", "yes"]
    # the LabelSet API is unchanged: class indices, not values
    coded = LabelSet.from_frame(YES_NO)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        idx = make_estimator(name).fit_predict(coded)
    assert isinstance(idx, np.ndarray) and idx.dtype == np.int64


def test_column_names_are_configurable() -> None:
    df = YES_NO.rename(columns={"task": "item", "worker": "annotator", "label": "answer"})
    out = DawidSkene().fit_predict(df, task="item", worker="annotator", label="answer")
    assert out.to_dict() == DawidSkene().fit_predict(YES_NO).to_dict()
    with pytest.raises(ValueError, match="no column 'task'"):
        DawidSkene().fit_predict(df)


def test_numeric_labels_and_mixed_ids_round_trip() -> None:
    df = pd.DataFrame({"task": [10, 10, 10, "x", "x", "x"], "worker": [1, 2, 3, 1, 2, 3],
                       "label": [2.5, 2.5, 0.5, 0.5, 0.5, 0.5]})
    out = DawidSkene().fit_predict(df)
    assert out.to_dict() == {10: 2.5, "x": 0.5}
    ints = df.assign(label=[3, 3, 1, 1, 1, 1])
    assert DawidSkene().fit_predict(ints).to_dict() == {10: 3, "x": 1}


def test_missing_value_is_named() -> None:
    df = YES_NO.copy()
    df.loc[4, "label"] = None
    with pytest.raises(ValueError, match="column 'label' has a missing value at row 4"):
        DawidSkene().fit_predict(df)


def test_from_records_codes_and_maps_back() -> None:
    data = LabelSet.from_records([("b", "w2", "yes"), ("a", "w1", "no"), ("b", "w1", "no")])
    assert data.task_ids.tolist() == ["b", "a"]  # first appearance
    assert data.worker_ids.tolist() == ["w2", "w1"]
    assert data.class_values.tolist() == ["no", "yes"]  # sorted values
    assert data.tasks.tolist() == [0, 1, 0] and data.labels.tolist() == [1, 0, 0]
    with pytest.raises(ValueError, match="record 1 is not a"):
        LabelSet.from_records([("a", "w", 1), ("b", "w")])


def test_records_work_without_pandas_and_frames_say_how_to_install(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas now raises ImportError
    data = LabelSet.from_records(YES_NO.itertuples(index=False, name=None))
    labels = DawidSkene().fit(data).labels_
    assert data.class_values[labels].tolist() == ["yes", "no", "yes", "no"]
    with pytest.raises(ImportError) as err:
        DawidSkene().fit_predict(YES_NO.to_dict("list"))
    assert str(err.value) == PANDAS_HINT and 'pip install "marketsim[pandas]"' in str(err.value)


def _zhang_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "shared" / "data" / "zhang2014"


@pytest.mark.skipif(importlib.util.find_spec("crowdkit") is None, reason="crowd-kit not installed")
@pytest.mark.parametrize("stem", ["bluebird", "rte", "dog"])
def test_dawid_skene_agrees_with_crowdkit(stem: str) -> None:
    """>= 99.9% of tasks agree with crowd-kit's DawidSkene at 100 iterations (see
    benchmarks/agree_crowdkit.py for the settings matched and for Web)."""
    from crowdkit.aggregation import DawidSkene as CrowdKitDawidSkene

    folder = _zhang_dir()
    if not folder.is_dir():
        pytest.skip(f"reference data not found at {folder}")
    crowd = np.loadtxt(folder / f"{stem}_crowd.txt", dtype=np.int64, ndmin=2)
    df = pd.DataFrame({"task": crowd[:, 0], "worker": crowd[:, 1], "label": crowd[:, 2]})
    ours = DawidSkene(max_iter=100, tol=0.0).fit_predict(df)
    with warnings.catch_warnings():  # crowd-kit's own pandas deprecation warnings
        warnings.simplefilter("ignore")
        theirs = CrowdKitDawidSkene(n_iter=100, tol=-np.inf).fit_predict(df).loc[ours.index]
    assert (ours.to_numpy() == theirs.to_numpy()).mean() >= 0.999
