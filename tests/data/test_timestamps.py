"""The ``time`` column of a labels file: numbers or ISO-8601 date-times, aligned with the label
set's rows, read only by the timed loader; bad values are one InputError naming the file, line
and column. And the Poisson fit of :mod:`marketsim.aggregation.arrival_fit` on known rates."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from marketsim.aggregation.arrival_fit import POOR_FIT_CV, fit_arrivals, gap_stats
from marketsim.data.csv_labels import load_csv, load_csv_timed
from marketsim.data.load import load_labels_timed
from marketsim.data.timestamps import Timestamps
from marketsim.errors import InputError


def _file(tmp_path: Path, text: str, name: str = "crowd.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_date_times_are_hours_from_the_first_label_in_file_order(tmp_path: Path) -> None:
    path = _file(tmp_path, "task,worker,label,submitted_at\n"
                 "a,w1,1,2024-05-01T10:30:00+00:00\n"
                 "a,w2,0,2024-05-01T10:00:00Z\n"
                 "b,w1,1,2024-05-01 14:00:00+02:00\n")  # 12:00 UTC
    data, _, times = load_csv_timed(path)
    assert times is not None and times.kind == "date-times" and times.unit == "hour"
    assert times.column == "submitted_at"
    assert np.allclose(times.values, [0.5, 0.0, 2.0])  # row order, not sorted
    assert data.n_labels == 3 and list(data.workers) == [0, 1, 0]


def test_date_times_without_a_zone_are_one_clock_and_dates_count(tmp_path: Path) -> None:
    path = _file(tmp_path, "task,worker,label,Created\n"
                 "a,w1,1,2024-03-30\na,w2,0,2024-04-01T06:00\n")
    _, _, times = load_csv_timed(path)
    assert times is not None and np.allclose(times.values, [0.0, 54.0])


def test_numbers_keep_their_own_unit(tmp_path: Path) -> None:
    path = _file(tmp_path, "time;task;worker;label\n1700000100.5;a;w1;x\n1700000000;b;w1;y\n")
    _, _, times = load_csv_timed(path)
    assert times is not None and times.kind == "numbers"
    assert times.unit == "unit" and np.allclose(times.values, [100.5, 0.0])


def test_a_file_without_a_time_column_has_no_times_and_zhang_files_neither(
        tmp_path: Path) -> None:
    assert load_csv_timed(_file(tmp_path, "task,worker,label\na,w1,1\n"))[2] is None
    assert load_labels_timed(_file(tmp_path, "0 0 1\n1 0 0\n", "crowd.txt"))[2] is None


def test_columns_maps_the_time_role(tmp_path: Path) -> None:
    path = _file(tmp_path, "task,worker,label,when,time\na,w1,1,5,x\nb,w1,0,7,y\n")
    _, _, times = load_csv_timed(path, columns={"time": "when"})
    assert times is not None and times.column == "when" and np.allclose(times.values, [0, 2])
    with pytest.raises(InputError, match="no column 'nope'"):
        load_csv_timed(path, columns={"time": "nope"})


def test_the_untimed_loader_ignores_the_column_even_when_it_is_bad(tmp_path: Path) -> None:
    path = _file(tmp_path, "task,worker,label,time\na,w1,1,soon\nb,w2,0,\n")
    data, _ = load_csv(path)
    assert data.n_labels == 2
    data, _ = load_csv(path, columns={"time": "time"})
    assert data.n_labels == 2


@pytest.mark.parametrize(("rows", "line", "message"), [
    ("a,w1,1,soon\n", 2, "time 'soon' is neither a number nor an ISO-8601 date-time"),
    ("a,w1,1,3\nb,w1,1,\n", 3, "empty time"),
    ("a,w1,1,3\nb,w1,1,2024-05-01T10:00\n", 3, "is an ISO-8601 date-time, but the first "
     "time is a number"),
    ("a,w1,1,2024-05-01T10:00\nb,w1,1,17\n", 3, "time '17' is a number, not an ISO-8601"),
    ("a,w1,1,2024-05-01T10:00\nb,w1,1,2024-05-01T11:00Z\n", 3, "has a time zone but the "
     "first does not"),
    ("a,w1,1,2024-05-01T10:00Z\nb,w1,1,2024-05-01T11:00\n", 3, "has no time zone but the "
     "first has one"),
    ("a,w1,1,3\nb,w1,1,nan\n", 3, "time 'nan' is not a finite number"),
    ("a,w1,1,inf\nb,w1,1,3\n", 2, "time 'inf' is not a finite number"),
    ("a,w1,1,1e999\nb,w1,1,3\n", 2, "time '1e999' is not a finite number"),
    ("a,w1,1,2024-13-01\n", 2, "neither a number nor an ISO-8601"),
])
def test_a_bad_time_names_file_line_and_column(tmp_path: Path, rows: str, line: int,
                                               message: str) -> None:
    path = _file(tmp_path, "task,worker,label,timestamp\n" + rows)
    with pytest.raises(InputError) as err:
        load_csv_timed(path)
    assert err.value.source == str(path) and err.value.where == str(line)
    assert "column 'timestamp'" in err.value.detail and message in err.value.detail


@pytest.mark.parametrize(("header", "message"), [
    ("task,worker,label,time,timestamp", "columns 'time' and 'timestamp' both give the time; "
     "keep one (or choose one with --columns time=COLUMN)"),
    ("task,worker,label,time,time", "column 'time' appears twice in the header"),
])
def test_a_time_column_given_twice_is_an_error(tmp_path: Path, header: str,
                                               message: str) -> None:
    path = _file(tmp_path, header + "\na,w1,1,1,2\n")
    with pytest.raises(InputError) as err:
        load_csv_timed(path)
    assert err.value.detail == message and err.value.where == "1"


def test_the_poisson_fit_recovers_a_known_rate_within_5_percent() -> None:
    # 5,000 labels: the rate's relative standard error is 1/sqrt(4999) = 1.4 %; 5 % is 3.5 se.
    rng = np.random.default_rng(3)
    t = np.cumsum(rng.exponential(1 / 12.0, 5000))
    fit = fit_arrivals(Timestamps(rng.permutation(t) - t.min(), "t", "numbers", "s"), "f")
    assert abs(fit.rate / 12.0 - 1) < 0.05
    assert fit.rate == pytest.approx(4999 / (t[-1] - t[0]))
    assert abs(fit.gaps.cv - 1) < 0.1 and not fit.poor


def test_bursts_raise_the_gaps_cv_and_mark_the_fit_poor() -> None:
    rng = np.random.default_rng(4)
    # sessions of 40 labels a second apart, an hour (3600 s on average) between sessions
    gaps = np.where(np.arange(4000) % 40 == 0, rng.exponential(3600, 4000),
                    rng.exponential(1.0, 4000))
    stats = gap_stats(np.cumsum(gaps))
    assert stats.cv > POOR_FIT_CV
    fit = fit_arrivals(Timestamps(np.cumsum(gaps), "t", "numbers", "s"), "f")
    assert fit.poor


def test_labels_all_at_one_time_fit_no_rate() -> None:
    with pytest.raises(InputError, match="every label has the same time"):
        fit_arrivals(Timestamps(np.zeros(5), "when", "numbers", "s"), "f.csv")
    with pytest.raises(InputError, match="every label has the same time"):
        fit_arrivals(Timestamps(np.zeros(1), "when", "numbers", "s"), "f.csv")
