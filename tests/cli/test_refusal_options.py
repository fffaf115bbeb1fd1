"""Every option a message suggests exists (issue #38 point 16: calibrate's refusal of a score
file recommended ``--scores``, an option of ``infer`` only).

Checked two ways: every ``--option`` written in the command-line modules and in the loaders
they share is an option of the command that can print it (its own module's command; for
shared modules, every command that reads label files; a message that names another command,
``run --resume``, is checked against that one); and the refusals of hostile inputs, run
through :func:`marketsim.cli.main`, are parsed for options that the argument parser of the
command that printed them must know.
"""

from __future__ import annotations

import argparse
import ast
import re
from pathlib import Path

import pytest

import marketsim
from marketsim.cli import COMMAND_MODULES, build_parser, main

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")
#: A command named in a message: ``marketsim run``, ``'run ...'``, ```infer ...``` or
#: ``(infer ...``; "a run folder" names none.
COMMAND = re.compile(r"(?:marketsim\s+|[`'(]|^)(" + "|".join(COMMAND_MODULES) + r")\b")
PACKAGE = Path(marketsim.__file__).parent
#: Modules whose messages reach every command that reads label files.
SHARED = [*sorted((PACKAGE / "data").glob("*.py")),
          *(PACKAGE / "cli" / f"{name}.py" for name in ("__init__", "duplicates", "notes"))]
LABEL_COMMANDS = ("infer", "calibrate")


def options() -> dict[str, set[str]]:
    """Each command's options (the top-level ones included)."""
    parser = build_parser()
    top = {o for a in parser._actions for o in a.option_strings}
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {name: top | {o for a in p._actions for o in a.option_strings}
            for name, p in sub.choices.items()}


def suggested(text: str, default: str) -> list[tuple[str, str]]:
    """``(command, option)`` for every option in ``text``: the command named (:data:`COMMAND`)
    last before it, else ``default``."""
    out = []
    for match in OPTION.finditer(text):
        named = COMMAND.findall(text[:match.start()])
        out.append((named[-1] if named else default, match.group()))
    return out


def strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [(node.lineno, node.value) for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)]


@pytest.mark.parametrize("command", list(COMMAND_MODULES))
def test_every_option_a_command_module_names_exists(command: str) -> None:
    known = options()
    path = PACKAGE / "cli" / f"{COMMAND_MODULES[command]}.py"
    wrong = [(line, cmd, opt) for line, text in strings(path)
             for cmd, opt in suggested(text, command) if opt not in known[cmd]]
    assert not wrong, f"{path.name}: options that do not exist: {wrong}"


@pytest.mark.parametrize("path", SHARED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_option_a_shared_module_names_exists_in_each_command_reading_labels(
        path: Path) -> None:
    known = options()
    wrong = [(line, cmd, opt) for line, text in strings(path) for command in LABEL_COMMANDS
             for cmd, opt in suggested(text, command) if opt not in known[cmd]]
    assert not wrong, f"{path.name}: options that do not exist: {wrong}"


HOSTILE = {
    "scores.csv": "task,worker,score\na,u,0.5\na,v,0.7\n",
    "labels.csv": "task,worker,label\na,u,1\na,v,0\nb,u,1\nb,v,1\n",
    "twice.csv": "task,worker,label\na,u,1\na,u,0\n",
    "times.csv": "task,worker,label,time,created\na,u,1,1,2\na,v,0,2,3\n",
    "empty.csv": "task,worker,label\n",
    "truth.csv": "task,label\nzz,1\n",
}
REFUSALS = [
    ["calibrate", "scores.csv", "--out", "t.toml"],
    ["infer", "scores.csv"],
    ["calibrate", "twice.csv", "--out", "t.toml"],
    ["infer", "twice.csv"],
    ["calibrate", "times.csv", "--out", "t.toml"],
    ["calibrate", "empty.csv", "--out", "t.toml"],
    ["calibrate", "labels.csv", "--truth", "truth.csv", "--out", "t.toml"],
    ["infer", "labels.csv", "--truth", "truth.csv"],
    ["calibrate", "labels.csv", "--out", "t.toml", "--columns", "label=task"],
    ["calibrate", "labels.csv", "--out", "t.toml", "--columns", "nope=x"],
    ["infer", "labels.csv", "--columns", "label=worker"],
    ["calibrate", "labels.csv", "--out", "t.toml", "--duplicates", "some"],
    ["calibrate", "labels.csv", "--out", "t.toml", "--delimiter", "x"],
    ["infer", "labels.csv", "--method", "gaussian-em"],
    ["calibrate", "--dataset", "rte", "--out", "t.toml", "--data-dir", "nowhere"],
    ["calibrate", "labels.csv", "--out", "t.toml", "--task-types", "9"],
    ["calibrate", "labels.csv", "--out", "t.toml", "--data-dir", "."],
    ["infer", "labels.csv", "--scores"],
]


@pytest.mark.parametrize("argv", REFUSALS, ids=" ".join)
def test_each_refusal_suggests_only_options_of_its_command(
        argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in HOSTILE.items():
        (tmp_path / name).write_text(text)
    capsys.readouterr()
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("marketsim: error:") and err.count("\n") == 1, err
    known = options()
    wrong = [(cmd, opt) for cmd, opt in suggested(err, argv[0]) if opt not in known[cmd]]
    assert not wrong, f"{err.strip()}: options that do not exist: {wrong}"


def defined_options(path: Path) -> set[str]:
    """The options ``path`` declares with ``add_argument`` (a module's own command line)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {arg.value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "attr", "") == "add_argument" for arg in node.args
            if isinstance(arg, ast.Constant) and str(arg.value).startswith("--")}


def test_every_option_any_module_names_exists_somewhere() -> None:
    """Beyond the command modules: a message of the scenario, study or report layers, or a
    docstring, names an option of some command, of a module's own command line
    (``python -m marketsim.record.schemas --write``) or of the benchmark script it names."""
    known = set().union(*options().values())
    modules = sorted(PACKAGE.rglob("*.py"))
    known |= set().union(*(defined_options(path) for path in modules))
    script = re.compile(r"benchmarks/(\w+)\.py")
    wrong = []
    for path in modules:
        for line, text in strings(path):
            for match in OPTION.finditer(text):
                named = script.findall(text[:match.start()])
                allowed = known if not named else defined_options(
                    PACKAGE.parent / "benchmarks" / f"{named[-1]}.py")
                if match.group() not in allowed:
                    wrong.append((str(path.relative_to(PACKAGE)), line, match.group()))
    assert not wrong, f"options that do not exist: {wrong}"
