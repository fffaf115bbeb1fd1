"""Fuzzing the label and truth loaders (CSV and Zhang formats) through ``marketsim.cli.main``.

Input classes per format:

- *well-formed, reformatted*: a valid label table written with random line endings (LF, CRLF,
  CR), a BOM, blank lines, extra spaces, quoted ids holding commas, quotes and non-ASCII text
  (CSV), extra whitespace (Zhang). These must be ACCEPTED, with the right counts;
- *hostile table*: missing or duplicated columns, empty cells, wrong field counts, duplicate
  (task, worker) pairs, conflicting or unknown truth, non-integer or huge numbers, non-UTF-8
  bytes spliced in, files cut short, with an optional truth file;
- *random junk*: arbitrary bytes and text;
- *score CSV* (``infer --scores``): well-formed score tables (must be accepted) and hostile
  ones (scores outside [0, 1], ``nan``/``inf``/text, missing columns, empty cells, duplicate
  pairs, bad true means), with an optional truth file;
- *feature CSV* (``infer --method ds-features --features``): hostile feature tables (values
  other than 0/1, unknown or repeated tasks, ragged rows, unnamed or no feature columns) beside
  a valid labels file.

Every case exits 0, or exits 2 with one stderr line ``marketsim: error: FILE[:LINE]: ...``
naming the labels or truth file (and the line, for a problem on a line) — never a traceback.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from marketsim.cli import main

#: Generated cases per input class at full scale: 2,000 per format (``fuzz_cases`` in
#: conftest.py: a tenth of them in the default test loop, all of them under ``-m slow``).
CASES = {"wellformed": 500, "hostile": 1000, "junk": 500}
FUZZ = settings(
    deadline=None,
    derandomize=not os.environ.get("MARKETSIM_FUZZ_RANDOM"),
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much,
                           # capsys is drained before and after every case (see run_infer)
                           HealthCheck.function_scoped_fixture],
)
METHODS = ("mv", "ds", "one-coin")

#: Whole-file problems, reported without a line number.
FILE_LEVEL = ("file not found", "no labels", "no truth", "empty file", "method ", "no scores",
              "no feature rows", "covers none of the")
#: Cases per score/feature-file input class (each under ~30 s on a shared 2-core machine).
SCORE_CASES = {"wellformed": 150, "hostile": 300}
FEATURE_CASES = 300


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz-labels")


def run_infer(
    capsys: pytest.CaptureFixture[str], labels: Path, truth: Path | None, method: str,
    *, extra: tuple[str, ...] = (), other: Path | None = None,
) -> tuple[str, dict | None]:
    """Run ``infer`` (with ``extra`` options; ``other`` is one more input file they name, e.g.
    ``--features``); check the contract; return (outcome, JSON result or None)."""
    args = ["infer", str(labels), "--json", "--method", method, "--max-iter", "20", *extra]
    if truth is not None:
        args += ["--truth", str(truth)]
    capsys.readouterr()
    code = main(args)
    out, err = capsys.readouterr()
    if code == 0:
        return "accepted", json.loads(out)
    assert code == 2, f"exit code {code}; stderr: {err!r}"
    assert "Traceback" not in err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"not one line: {err!r}"
    names = [str(labels)] + [str(f) for f in (truth, other) if f is not None]
    line = lines[0]
    m = re.match(r"marketsim: error: (.*?)(?::(\d+))?: (.*)$", line)
    assert m, line
    file_named = next((n for n in names if line.startswith(f"marketsim: error: {n}")), None)
    assert file_named, f"error does not name the file: {line!r}"
    rest = line[len(f"marketsim: error: {file_named}"):]
    has_line = re.match(r":\d+: ", rest) is not None
    if not has_line:
        assert any(rest[2:].startswith(s) for s in FILE_LEVEL), f"no line number: {line!r}"
    which = {str(labels): "labels", str(truth): "truth", str(other): "other"}[file_named]
    return f"rejected ({which} file, {'with line' if has_line else 'whole file'})", None


# --- CSV ---------------------------------------------------------------------------------------
IDS = st.one_of(
    st.sampled_from(["a", "b", "task 1", "x,y", 'say "hi"', "é", "日本", "007", "1.0", "-1",
                     "a\nb", " padded ", "#", "=1+1"]),
    st.text(st.characters(blacklist_categories=["Cs", "Cc"]), min_size=1, max_size=6),
)
CLASSES = st.sampled_from(["yes", "no", "maybe", "0", "1", "2", "1.0", "1.5", "-1", "nan",
                           "inf", "1e3", "Yes"])


def csv_text(rows: list[list[str]], quote_all: bool, newline: str = "\n",
             bom: bool = False, blank: tuple[int, ...] = ()) -> bytes:
    """CSV records ended by ``newline``, with blank lines before the records in ``blank`` and
    an optional BOM (line breaks inside quoted fields are kept as they are)."""
    out = ["\ufeff"] if bom else []
    for idx, row in enumerate(rows):
        buf = io.StringIO()
        csv.writer(buf, lineterminator=newline,
                   quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL).writerow(row)
        out.append(newline * blank.count(idx) + buf.getvalue())
    return "".join(out).encode("utf-8")


def reformat(text: str, newline: str, bom: bool, blank: list[int]) -> bytes:
    """Change line endings, add a BOM and blank lines (text without quoted line breaks)."""
    lines = text.split("\n")
    for at in sorted(blank, reverse=True):
        lines.insert(min(at, len(lines)), "")
    body = newline.join(lines)
    return (("\ufeff" if bom else "") + body).encode("utf-8")


@st.composite
def wellformed_csv(draw: st.DrawFn) -> tuple[bytes, int, int, int]:
    """A valid labels CSV (unique task-worker pairs), reformatted; with its expected sizes."""
    ids = IDS.filter(lambda s: s.strip() != "")
    tasks = draw(st.lists(ids, min_size=1, max_size=4, unique_by=str.strip))
    workers = draw(st.lists(ids, min_size=1, max_size=4, unique_by=str.strip))
    pairs = draw(st.lists(st.tuples(st.sampled_from(tasks), st.sampled_from(workers)),
                          min_size=1, max_size=10, unique=True))
    classes = draw(st.lists(st.sampled_from(["yes", "no", "maybe"]), min_size=1, max_size=3,
                            unique=True))
    header = draw(st.sampled_from([["task", "worker", "label"], ["question", "worker", "answer"],
                                   ["worker", "note", "Label", "TASK"]]))
    rows = [header]
    for t, w in pairs:
        rec = {"task": t, "question": t, "worker": w, "label": draw(st.sampled_from(classes)),
               "note": draw(IDS)}
        rec["answer"] = rec["label"]
        rows.append([rec[h.lower()] for h in header])
    data = csv_text(rows, draw(st.booleans()), draw(st.sampled_from(["\n", "\r\n"])),
                    draw(st.booleans()), tuple(draw(st.lists(st.integers(1, 12), max_size=3))))
    n_tasks = len({t.strip() for t, _ in pairs})
    n_workers = len({w.strip() for _, w in pairs})
    return data, len(pairs), n_tasks, n_workers


def test_csv_wellformed_is_accepted(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["wellformed"]))
    @given(case=wellformed_csv(), method=st.sampled_from(METHODS))
    def check(case, method) -> None:
        data, n_labels, n_tasks, n_workers = case
        path = folder / "labels.csv"
        path.write_bytes(data)
        outcome, result = run_infer(capsys, path, None, method)
        assert outcome == "accepted", "a valid file (line endings, BOM, quoting) was rejected"
        assert (result["n_labels"], result["n_tasks"], result["n_workers"]) == (
            n_labels, n_tasks, n_workers)
        tally.record("labels, CSV (infer)", "well-formed, reformatted (must be accepted)", outcome)

    check()


@st.composite
def delimited_tables(draw: st.DrawFn) -> tuple[list[list[str]], bool, str]:
    """A valid labels table (unique task-worker pairs, ids with quotes, commas, tabs...), the
    quoting and the line ending to write it with."""
    ids = (IDS | st.sampled_from(["a;b", "t\tu", "p|q"])).filter(lambda s: s.strip() != "")
    tasks = draw(st.lists(ids, min_size=1, max_size=4, unique_by=str.strip))
    workers = draw(st.lists(ids, min_size=1, max_size=4, unique_by=str.strip))
    pairs = draw(st.lists(st.tuples(st.sampled_from(tasks), st.sampled_from(workers)),
                          min_size=1, max_size=10, unique=True))
    header = draw(st.sampled_from([["task", "worker", "label"], ["worker", "note", "Label",
                                                                 "TASK"]]))
    rows = [header]
    for t, w in pairs:
        rec = {"task": t, "worker": w, "label": draw(st.sampled_from(["yes", "no", "2"])),
               "note": draw(ids)}
        rows.append([rec[h.lower()] for h in header])
    return rows, draw(st.booleans()), draw(st.sampled_from(["\n", "\r\n"]))


def delimited(rows: list[list[str]], sep: str, quote_all: bool, newline: str) -> bytes:
    buf = io.StringIO()
    csv.writer(buf, delimiter=sep, lineterminator=newline,
               quoting=csv.QUOTE_ALL if quote_all else csv.QUOTE_MINIMAL).writerows(rows)
    return buf.getvalue().encode("utf-8")


def test_csv_other_delimiters_parse_like_commas(fuzz_cases, folder: Path, capsys, tally) -> None:
    """A well-formed tab-, semicolon- or pipe-separated file gives the same result and the same
    posteriors file as its comma-separated version (delimiter detected from the header)."""
    @settings(FUZZ, max_examples=fuzz_cases(150))
    @given(case=delimited_tables(), sep=st.sampled_from(["\t", ";", "|"]),
           name=st.sampled_from(["labels.csv", "labels.tsv"]))
    def check(case, sep: str, name: str) -> None:
        rows, quote_all, newline = case
        results = []
        for label, delim in (("comma", ","), ("other", sep)):
            path = folder / (f"comma-{name}" if delim == "," else f"other-{name}")
            path.write_bytes(delimited(rows, delim, quote_all, newline))
            out = folder / f"post-{label}.csv"
            outcome, result = run_infer(capsys, path, None, "mv", extra=("--output", str(out)))
            assert outcome == "accepted", f"a valid {label}-separated file was rejected"
            for key in ("labels_file", "seconds", "load_seconds", "output"):
                result.pop(key)
            results.append((result, out.read_bytes()))
        assert results[0] == results[1]
        tally.record("labels, CSV (infer)", "well-formed, tab/semicolon/pipe (same as commas)",
                     "accepted")

    check()


@st.composite
def hostile_csv(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    columns = ["task", "question", "worker", "label", "answer", "truth", "score", "extra", ""]
    header = draw(st.lists(st.sampled_from(columns), min_size=0, max_size=5))
    if draw(st.booleans()):
        header = ["task", "worker", "label"] + header[:1]
    rows = [header]
    for _ in range(draw(st.integers(0, 8))):
        width = len(header) + draw(st.sampled_from([0, 0, 0, 0, -1, 1]))
        rows.append([draw(st.one_of(IDS, CLASSES, st.just(""), st.sampled_from(["0.5", "x"])))
                     for _ in range(max(width, 0))])
    if len(rows) > 2 and draw(st.booleans()):
        rows.append(list(rows[1]))  # a duplicate row
    data = csv_text(rows, draw(st.booleans()), draw(st.sampled_from(["\n", "\r\n", "\r"])),
                    draw(st.booleans()), tuple(draw(st.lists(st.integers(0, 10), max_size=2))))
    data = corrupt(draw, data)
    truth = None
    if draw(st.booleans()):
        trows = [draw(st.sampled_from([["task", "label"], ["question", "truth"], ["task"],
                                       ["task", "truth", "label"]]))]
        for _ in range(draw(st.integers(0, 4))):
            trows.append([draw(st.one_of(IDS, CLASSES)) for _ in range(len(trows[0]))])
        truth = corrupt(draw, csv_text(trows, False))
    return data, truth


def corrupt(draw: st.DrawFn, data: bytes) -> bytes:
    """Maybe splice non-UTF-8 bytes or a quote in, or cut the file short."""
    kind = draw(st.sampled_from(["none", "none", "none", "bytes", "quote", "cut"]))
    at = draw(st.integers(0, len(data)))
    if kind == "bytes":
        return data[:at] + draw(st.sampled_from([b"\xff", b"\xc3(", b"\x00", b"\xe2\x82"])) \
            + data[at:]
    if kind == "quote":
        return data[:at] + b'"' + data[at:]
    if kind == "cut":
        return data[:at]
    return data


def write_case(folder: Path, case: tuple[bytes, bytes | None], labels: str,
               truth: str) -> tuple[Path, Path | None]:
    """Write a hostile case's labels file (and its truth file, when it has one)."""
    data, truth_data = case
    path = folder / labels
    path.write_bytes(data)
    if truth_data is None:
        return path, None
    (folder / truth).write_bytes(truth_data)
    return path, folder / truth


def test_csv_hostile(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["hostile"]))
    @given(case=hostile_csv(), method=st.sampled_from(METHODS))
    def check(case, method) -> None:
        path, truth = write_case(folder, case, "labels.csv", "truth.csv")
        outcome, _ = run_infer(capsys, path, truth, method)
        tally.record("labels, CSV (infer)", "hostile table (+ truth file half the time)", outcome)

    check()


def test_csv_junk(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["junk"]))
    @given(data=st.one_of(st.binary(max_size=120), st.text(max_size=120).map(str.encode)))
    def check(data: bytes) -> None:
        path = folder / "labels.csv"
        path.write_bytes(data)
        outcome, _ = run_infer(capsys, path, None, "mv")
        tally.record("labels, CSV (infer)", "random bytes/text", outcome)

    check()


# --- Zhang format ------------------------------------------------------------------------------
@st.composite
def wellformed_zhang(draw: st.DrawFn) -> tuple[bytes, int, int, int]:
    pairs = draw(st.lists(st.tuples(st.integers(-5, 30), st.integers(0, 6)), min_size=1,
                          max_size=12, unique=True))
    lines = []
    for t, w in pairs:
        sep = draw(st.sampled_from([" ", "\t", "  ", " \t "]))
        lead, trail = draw(st.sampled_from(["", " "])), draw(st.sampled_from(["", " ", "\t"]))
        lines.append(f"{lead}{t}{sep}{w}{sep}{draw(st.integers(1, 3))}{trail}")
    data = reformat("\n".join(lines) + draw(st.sampled_from(["", "\n"])),
                    draw(st.sampled_from(["\n", "\r\n"])), draw(st.booleans()),
                    draw(st.lists(st.integers(0, 12), max_size=3)))
    return data, len(pairs), len({t for t, _ in pairs}), len({w for _, w in pairs})


def test_zhang_wellformed_is_accepted(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["wellformed"]))
    @given(case=wellformed_zhang(), method=st.sampled_from(METHODS))
    def check(case, method) -> None:
        data, n_labels, n_tasks, n_workers = case
        path = folder / "crowd.txt"
        path.write_bytes(data)
        outcome, result = run_infer(capsys, path, None, method)
        assert outcome == "accepted", "a valid file (line endings, BOM, spacing) was rejected"
        assert (result["n_labels"], result["n_tasks"], result["n_workers"]) == (
            n_labels, n_tasks, n_workers)
        tally.record("labels, Zhang (infer)", "well-formed, reformatted (must be accepted)",
                     outcome)

    check()


NUMBERS = st.one_of(
    st.integers(-3, 12),
    st.sampled_from(["0", "-0", "+3", "1.5", "1e3", "x", "9" * 20, "-" + "9" * 19, "0x10",
                     str(2**63 - 1), str(2**62), "100000", "١"]),
)


@st.composite
def hostile_zhang(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    lines = []
    for _ in range(draw(st.integers(0, 8))):
        fields = draw(st.lists(NUMBERS, min_size=draw(st.sampled_from([3, 3, 3, 2, 4, 0])),
                               max_size=4))
        lines.append(" ".join(str(f) for f in fields))
    if lines and draw(st.booleans()):
        lines.append(lines[0])
    data = reformat("\n".join(lines), draw(st.sampled_from(["\n", "\r\n", "\r"])),
                    draw(st.booleans()), draw(st.lists(st.integers(0, 10), max_size=2)))
    data = corrupt(draw, data)
    truth = None
    if draw(st.booleans()):
        tl = [" ".join(str(draw(NUMBERS)) for _ in range(draw(st.sampled_from([2, 2, 1, 3]))))
              for _ in range(draw(st.integers(0, 5)))]
        truth = corrupt(draw, "\n".join(tl).encode("utf-8"))
    return data, truth


def test_zhang_hostile(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["hostile"]))
    @given(case=hostile_zhang(), method=st.sampled_from(METHODS))
    # Found by this test: one label value of 2**62 made the loader allocate 2**62 classes.
    @example(case=(b"1 1 4611686018427387904\n", None), method="mv")
    def check(case, method) -> None:
        path, truth = write_case(folder, case, "crowd.txt", "truth.txt")
        outcome, _ = run_infer(capsys, path, truth, method)
        tally.record("labels, Zhang (infer)", "hostile table (+ truth file half the time)", outcome)

    check()


def test_zhang_junk(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(CASES["junk"]))
    @given(data=st.one_of(st.binary(max_size=120), st.text(max_size=120).map(str.encode)))
    def check(data: bytes) -> None:
        path = folder / "crowd.txt"
        path.write_bytes(data)
        outcome, _ = run_infer(capsys, path, None, "mv")
        tally.record("labels, Zhang (infer)", "random bytes/text", outcome)

    check()


# --- score CSV (infer --scores) ----------------------------------------------------------------
SCORES = st.one_of(
    st.floats(0, 1).map(lambda x: f"{x:.6g}"),
    st.sampled_from(["", "0", "1", "0.5", "1.0000001", "-0.0", "-1e-9", "1.5", "nan", "NaN",
                     "inf", "-inf", "x", "0x1", "1e-320", " 0.25 ", "5e-1", "½", "0,5"]),
)
SCORE_METHODS = ("gaussian-em", "gaussian-hard-em")


@st.composite
def wellformed_scores(draw: st.DrawFn) -> tuple[bytes, int, int, int, int]:
    """A valid score CSV (both layouts, quoting, CRLF, BOM, empty = missing); its sizes."""
    ids = IDS.filter(lambda s: s.strip() != "")
    tasks = draw(st.lists(ids, min_size=1, max_size=4, unique_by=str.strip))
    workers = draw(st.lists(ids, min_size=1, max_size=4, unique_by=str.strip))
    pairs = draw(st.lists(st.tuples(st.sampled_from(tasks), st.sampled_from(workers)),
                          min_size=1, max_size=10, unique_by=lambda p: (p[0].strip(),
                                                                        p[1].strip())))
    header = draw(st.sampled_from([["task", "worker", "score"],
                                   ["task", "worker", "label", "score"],
                                   ["Score", "note", "WORKER", "question"]]))
    values = [draw(st.floats(0, 1).map(lambda x: f"{x:.6g}") | st.just("")) for _ in pairs]
    if all(v == "" for v in values):
        values[0] = "0.5"
    rows = [header]
    for (t, w), v in zip(pairs, values, strict=True):
        rec = {"task": t, "question": t, "worker": w, "score": v, "label": draw(IDS | st.just("")),
               "note": draw(IDS)}
        rows.append([rec[h.lower()] for h in header])
    data = csv_text(rows, draw(st.booleans()), draw(st.sampled_from(["\n", "\r\n"])),
                    draw(st.booleans()), tuple(draw(st.lists(st.integers(1, 12), max_size=3))))
    n_scores = sum(v != "" for v in values)
    return (data, len(pairs), len({t.strip() for t, _ in pairs}),
            len({w.strip() for _, w in pairs}), n_scores)


def test_scores_wellformed_is_accepted(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(SCORE_CASES["wellformed"]))
    @given(case=wellformed_scores(), method=st.sampled_from(SCORE_METHODS))
    def check(case, method) -> None:
        data, n_labels, n_tasks, n_workers, n_scores = case
        path = folder / "scores.csv"
        path.write_bytes(data)
        outcome, result = run_infer(capsys, path, None, method, extra=("--scores",))
        assert outcome == "accepted", "a valid score file was rejected"
        assert (result["n_labels"], result["n_tasks"], result["n_workers"], result["n_scores"]) == (
            n_labels, n_tasks, n_workers, n_scores)
        assert 0 <= result["n_good"] <= n_workers
        tally.record("scores, CSV (infer --scores)", "well-formed, reformatted (must be accepted)",
                     outcome)

    check()


def mostly(draw: st.DrawFn, good: st.SearchStrategy, bad: st.SearchStrategy,
           p_bad: float = 0.1) -> object:
    """A draw from ``good``, or from ``bad`` with probability about ``p_bad``: hostile files
    are mostly valid, so that most cases reach the deeper checks (and the fit) before failing."""
    return draw(bad) if draw(st.integers(0, 99)) < 100 * p_bad else draw(good)


VALID_SCORES = st.floats(0, 1).map(lambda x: f"{x:.6g}") | st.sampled_from(["", "0", "1"])


@st.composite
def hostile_scores(draw: st.DrawFn) -> tuple[bytes, bytes | None]:
    columns = ["task", "question", "worker", "score", "label", "mean", "extra", ""]
    header = mostly(draw, st.sampled_from([["task", "worker", "score"],
                                           ["task", "worker", "label", "score"]]),
                    st.lists(st.sampled_from(columns), min_size=0, max_size=5), 0.2)
    tasks = st.sampled_from(["a", "b", "c", "d"])
    workers = st.sampled_from(["w1", "w2", "w3"])
    rows = [header]
    for _ in range(draw(st.integers(0, 8))):
        rec = {"task": mostly(draw, tasks, IDS | st.just("")),
               "question": draw(tasks),
               "worker": mostly(draw, workers, IDS | st.just("")),
               "score": mostly(draw, VALID_SCORES, SCORES, 0.05),
               "label": draw(CLASSES | st.just("")), "mean": draw(SCORES), "extra": draw(IDS),
               "": ""}
        row = [rec[h] for h in header]
        change = mostly(draw, st.just(0), st.sampled_from([-1, 1]), 0.05)
        rows.append(row[:change] if change < 0 else row + ["x"] * change)
    if len(rows) > 2 and draw(st.integers(0, 9)) == 0:
        rows.append(list(rows[1]))  # a duplicate (task, worker) pair
    data = csv_text(rows, draw(st.booleans()), draw(st.sampled_from(["\n", "\r\n", "\r"])),
                    draw(st.booleans()), tuple(draw(st.lists(st.integers(0, 10), max_size=2))))
    data = mostly(draw, st.just(data), st.builds(lambda d: corrupt(draw, d), st.just(data)), 0.2)
    truth = None
    if draw(st.booleans()):
        theader = mostly(draw, st.sampled_from([["task", "mean"], ["question", "value"]]),
                         st.sampled_from([["task"], ["task", "label"], ["task", "mean", "value"],
                                          ["mean", "task"]]), 0.2)
        trows = [theader]
        for _ in range(draw(st.integers(0, 4))):
            trows.append([mostly(draw, tasks, IDS) if h in ("task", "question")
                          else mostly(draw, VALID_SCORES.filter(bool), SCORES, 0.1)
                          for h in theader])
        truth = csv_text(trows, False)
        truth = mostly(draw, st.just(truth), st.builds(lambda d: corrupt(draw, d),
                                                       st.just(truth)), 0.2)
    return data, truth


def test_scores_hostile(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(SCORE_CASES["hostile"]))
    @given(case=hostile_scores(), method=st.sampled_from(SCORE_METHODS))
    def check(case, method) -> None:
        data, truth_data = case
        path, truth = folder / "scores.csv", None
        path.write_bytes(data)
        if truth_data is not None:
            truth = folder / "means.csv"
            truth.write_bytes(truth_data)
        outcome, result = run_infer(capsys, path, truth, method, extra=("--scores",))
        if result is not None and truth is not None:
            for key in ("rmse", "rmse_plain_mean"):
                assert result[key] is None or 0.0 <= result[key] <= 1.0
        tally.record("scores, CSV (infer --scores)", "hostile table (+ true means half the time)",
                     outcome)

    check()


# --- feature CSV (infer --features) ------------------------------------------------------------
FEATURE_LABELS = "task,worker,label\na,w1,yes\na,w2,no\nb,w1,no\nc,w2,yes\nd,w1,yes\n"
FEATURE_TASKS = st.one_of(st.sampled_from(["a", "b", "c", "d", " a ", "A", "e", "zz", ""]), IDS)
VALID_FEATURES = st.sampled_from(["0", "1", "", "1.0", "0.0", " 1 ", "1e0", "١"])
FEATURE_VALUES = st.sampled_from(["2", "-1", "yes", "nan", "true", "0x1", "0.5", "inf"])


@st.composite
def hostile_features(draw: st.DrawFn) -> bytes:
    names = ["task", "question", "f1", "f2", "F1", "", "label", "é"]
    header = mostly(draw, st.sampled_from([["task", "f1"], ["task", "f1", "f2"],
                                           ["f2", "question", "é"]]),
                    st.lists(st.sampled_from(names), min_size=0, max_size=4), 0.2)
    rows = [header]
    tasks = draw(st.permutations(["a", "b", "c", "d"]))[:draw(st.integers(0, 4))]
    tasks += draw(st.lists(FEATURE_TASKS, max_size=1 if draw(st.integers(0, 3)) == 0 else 0))
    for task in tasks:
        row = [task if h in ("task", "question") else mostly(draw, VALID_FEATURES,
                                                               FEATURE_VALUES, 0.05)
               for h in header]
        change = mostly(draw, st.just(0), st.sampled_from([-1, 1]), 0.05)
        rows.append(row[:change] if change < 0 else row + ["1"] * change)
    if len(rows) > 2 and draw(st.integers(0, 9)) == 0:
        rows.append(list(rows[1]))  # a duplicate task row
    data = csv_text(rows, draw(st.booleans()), draw(st.sampled_from(["\n", "\r\n", "\r"])),
                    draw(st.booleans()), tuple(draw(st.lists(st.integers(0, 8), max_size=2))))
    return mostly(draw, st.just(data), st.builds(lambda d: corrupt(draw, d), st.just(data)), 0.2)


def test_features_hostile(fuzz_cases, folder: Path, capsys, tally) -> None:
    @settings(FUZZ, max_examples=fuzz_cases(FEATURE_CASES))
    @given(data=hostile_features())
    def check(data: bytes) -> None:
        labels, features = folder / "flabels.csv", folder / "features.csv"
        labels.write_text(FEATURE_LABELS)
        features.write_bytes(data)
        outcome, result = run_infer(capsys, labels, None, "ds-features",
                                    extra=("--features", str(features)), other=features)
        if result is not None:
            assert result["n_tasks"] == 4 and 1 <= result["n_tasks_with_features"] <= 4
        else:
            assert "labels file" not in outcome, "the valid labels file was blamed"
        tally.record("features, CSV (infer --features)", "hostile table beside valid labels",
                     outcome)

    check()
