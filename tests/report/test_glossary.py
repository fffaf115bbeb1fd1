"""The glossary reports link to: one source (``marketsim/report/glossary.md``, the same text as
``docs/glossary.md``), copied next to every ``report.md`` and ``sweep.md``, and every link a
generated report makes lands on an entry of the copy in its folder."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from marketsim.cli import main
from marketsim.report.glossary import (
    GLOSSARY_NAME,
    SOURCE,
    TERMS,
    anchor,
    anchors,
    link_terms,
    unlink_terms,
)

ROOT = Path(__file__).resolve().parents[2]

#: A sweep over the good-worker share of a spammer-hammer crowd with gold and blocking: its
#: reports use most of the glossary's words.
SWEEP = """
[scenario]
name = "glossary test"
seed = 5
replicates = 2
[tasks]
count = 60
[workers]
count = 10
model = "spammer-hammer"
[budget]
edges = 300
money = 280
batch = 40
[sweep]
workers.spammer_hammer.hammer_fraction = [0.3, 0.6]
[[arms]]
name = "pay everyone"
policy = "uniform"
inference = "one-coin"
[[arms]]
name = "gold + blocking"
policy = "uniform"
inference = "one-coin-shifted-beta"
gold = { count = 10, rate = 0.2 }
blocking = { after = 2, min_accuracy = 0.75 }
"""


def test_docs_glossary_is_the_package_glossary() -> None:
    assert (ROOT / "docs" / GLOSSARY_NAME).read_bytes() == SOURCE.read_bytes()


def test_every_linked_term_has_an_entry() -> None:
    known = anchors(SOURCE.read_text(encoding="utf-8"))
    for _term, heading in TERMS:
        assert anchor(heading) in known, heading
    for needed in ("arm", "replicate", "labels-and-edges", "one-coin-model", "em", "prior",
                   "paired-interval", "common-random-numbers", "spammer-hammer-crowd"):
        assert needed in known


def test_terms_are_linked_once_in_running_text_only() -> None:
    text = ("Every arm runs on each replicate.\n\n| arm | replicates |\n\nAn arm again, "
            "`arm` in code, [arm](elsewhere.md) linked, the class prior and the prior.")
    out = link_terms(text)
    assert out.count("](glossary.md#arm)") == 1
    assert "Every [arm](glossary.md#arm) runs on each [replicate](glossary.md#replicate)" in out
    assert "| arm | replicates |" in out  # tables keep their exact lines
    assert "`arm` in code, [arm](elsewhere.md)" in out
    assert "the class prior and the [prior](glossary.md#prior)" in out


#: Arm names made of glossary words, added to SWEEP's arms in the run the tests below read.
NAMES = ["arm", "paired interval prior", "EM replicates"]


@pytest.fixture(scope="module")
def sweep_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """SWEEP with three more arms named with glossary words, run once by the command line
    (and its first point's report.html): the folder every test of a generated report reads."""
    folder = tmp_path_factory.mktemp("glossary")
    arms = "".join(f'[[arms]]\nname = "{n}"\npolicy = "uniform"\n' for n in NAMES)
    path = folder / "s.toml"
    path.write_text(SWEEP + arms, encoding="utf-8")
    run = folder / "run"
    assert main(["run", str(path), "--out", str(run), "--jobs", "1", "--quiet",
                 "--no-figures"]) == 0
    assert main(["report", str(run / "points" / "p000"), "--html", "--no-figures"]) == 0
    return run


def test_every_link_of_a_generated_report_resolves(sweep_run: Path) -> None:
    out = sweep_run
    reports = [out / "sweep.md", *sorted(out.glob("points/*/report.md"))]
    assert len(reports) == 3
    linked: set[str] = set()
    for report in reports:
        text = report.read_text(encoding="utf-8")
        glossary = report.parent / GLOSSARY_NAME
        assert glossary.read_bytes() == SOURCE.read_bytes()
        known = anchors(glossary.read_text(encoding="utf-8"))
        targets = re.findall(r"\]\((glossary\.md)(?:#([^)]*))?\)", text)
        assert targets, f"{report} links no term"
        for name, fragment in targets:
            assert (report.parent / name).is_file()
            assert not fragment or fragment in known, f"{report}: #{fragment}"
            linked.add(fragment)
    # the words a student meets first are linked
    assert {"arm", "replicate", "paired-interval", "common-random-numbers",
            "spammer-hammer-crowd", "gold-questions"} <= linked


def test_unlinking_gives_back_the_plain_text() -> None:
    text = "Every arm runs on each replicate, with its paired 95 % interval."
    assert unlink_terms(link_terms(text)) == text


def test_a_word_inside_a_name_is_never_linked() -> None:
    """A name is text (issue #38, point 10): a glossary word inside an arm's name stays part
    of the name; the same word elsewhere in running text is still linked."""
    text = "The arm *replicates of EM* ran 3 replicates with EM."
    linked = link_terms(text, names=["replicates of EM"])
    assert "*replicates of EM*" in linked
    assert f"3 [replicates]({GLOSSARY_NAME}#replicate)" in linked
    assert f"with [EM]({GLOSSARY_NAME}#em)" in linked
    assert link_terms("a is an arm", names=["a"]).startswith("a is an [arm]")


def test_report_and_sweep_show_names_made_of_glossary_words_unlinked(sweep_run: Path) -> None:
    """Arms named with glossary words: sweep.md, each point's report.md and report.html show
    each name as written, never with a link inside it."""
    names, run = NAMES, sweep_run
    shown = 0
    for report in [run / "sweep.md", *sorted(run.glob("points/*/report.md"))]:
        for emphasis in re.findall(r"(?<!\*)\*([^*\n]+)\*(?!\*)", report.read_text("utf-8")):
            if unlink_terms(emphasis) in names:
                assert emphasis in names, (report.name, emphasis)
                shown += 1
    html = (run / "points" / "p000" / "report.html").read_text(encoding="utf-8")
    for emphasis in re.findall(r"<em>(.*?)</em>", html):
        if re.sub(r"<[^>]+>", "", emphasis) in names:
            assert "<a" not in emphasis, emphasis
            shown += 1
    assert shown >= len(names)
