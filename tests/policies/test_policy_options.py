"""Components own their options (issue #26): a policy's ``Options`` model is read by its
constructor, ``validate`` (built-in and plug-in policies alike), ``marketsim list --policy``,
the generated docs and the JSON Schema."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest

from marketsim.cli import main
from marketsim.errors import InputError
from marketsim.options import OptionError
from marketsim.policies.random_forest import RandomForestPolicy
from marketsim.policies.registry import POLICIES, make_policy
from marketsim.scenario import docs
from tests.helpers import schema_validator

#: A plug-in policy declaring its options the way the built-in ones do.
PLUGIN = textwrap.dedent('''
    from typing import Literal

    from marketsim.options import F, Options
    from marketsim.policies.base import Policy


    class CappedOptions(Options):
        """``capped`` options."""

        cap: int = F(3, "labels per task at most", ge=1, le=50)
        order: Literal["fewest", "random"] = F("fewest", "which tasks first")


    class Capped(Policy[CappedOptions]):
        """Fewest labels first, never more than ``cap`` per task."""

        name = "capped"
        Options = CappedOptions

        def bind(self, info):
            self.n = info.n_tasks

        def rank(self, state, rng):
            return rng.permutation(self.n)
''')

SCENARIO = textwrap.dedent('''
    [tasks]
    count = 20
    [workers]
    count = 5
    [budget]
    edges = 40
    batch = 10
    [[arms]]
    name = "plug"
    policy = {{ name = "capped_plugin:Capped"{options} }}
    inference = "mv"
''')


Command = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Command:
    """``marketsim ARGS`` by :func:`marketsim.cli.main` in this process, from the folder
    ``tmp_path`` (on ``sys.path``, as the current folder is for ``python -m``) and 200
    columns wide: exit code and output as a finished process's."""
    def command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
        monkeypatch.chdir(tmp_path)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setenv("COLUMNS", "200")
        sys.modules.pop("capped_plugin", None)  # each test's own copy of the plug-in
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return subprocess.CompletedProcess(["marketsim", *args], code, out, err)

    return command


@pytest.fixture()
def plugin(tmp_path: Path) -> Path:
    (tmp_path / "capped_plugin.py").write_text(PLUGIN, encoding="utf-8")
    return tmp_path


def test_validate_checks_a_plugin_policys_options_against_its_model(plugin: Path,
                                                                    cli: Command) -> None:
    (plugin / "bad.toml").write_text(SCENARIO.format(options=", cap = 80"), encoding="utf-8")
    bad = cli(plugin, "validate", "bad.toml", "--allow-imports")
    assert bad.returncode == 2, bad.stdout + bad.stderr
    line = bad.stderr.strip()
    assert "\n" not in line and "arms[0].policy.cap must be <= 50, got 80" in line, line
    (plugin / "typo.toml").write_text(SCENARIO.format(options=", cp = 2"), encoding="utf-8")
    typo = cli(plugin, "validate", "typo.toml", "--allow-imports")
    assert typo.returncode == 2 and "did you mean cap?" in typo.stderr, typo.stderr
    (plugin / "good.toml").write_text(SCENARIO.format(options=', cap = 5, order = "random"'),
                                      encoding="utf-8")
    good = cli(plugin, "validate", "good.toml", "--allow-imports")
    assert good.returncode == 0, good.stdout + good.stderr


def test_list_policy_prints_a_plugin_policys_options(plugin: Path, cli: Command) -> None:
    result = cli(plugin, "list", "--policy", "capped_plugin:Capped")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Fewest labels first" in out
    rows = {cells[1].strip(): [c.strip() for c in cells[2:-1]] for line in out.splitlines()
            if len(cells := line.split("│")) == 7}
    assert rows["cap"] == ["integer", "3", "≥ 1, ≤ 50", "labels per task at most"]
    assert rows["order"] == ["string", '"fewest"', '"fewest", "random"', "which tasks first"]


def test_list_policy_prints_a_builtin_policys_options_and_refuses_unknown_names(
        tmp_path: Path, cli: Command) -> None:
    result = cli(tmp_path, "list", "--policy", "knowledge-gradient")
    assert result.returncode == 0, result.stderr
    assert "optimistic" in result.stdout and "a0" in result.stdout
    assert "options: none" in cli(tmp_path, "list", "--policy", "uniform").stdout
    bad = cli(tmp_path, "list", "--policy", "unifrm")
    assert bad.returncode == 2 and "did you mean uniform?" in bad.stderr, bad.stderr


def test_the_constructor_reads_the_options_model() -> None:
    """Defaults and ranges come from ``Options``; ``get_params`` returns the options."""
    policy = RandomForestPolicy(n_trees=3)
    assert policy.options.n_trees == 3 and policy.options.ensemble_size == 10
    assert policy.get_params()["n_trees"] == 3
    with pytest.raises(OptionError, match="n_trees"):
        RandomForestPolicy(n_trees=0)
    with pytest.raises(OptionError, match="n_jobs must be -1 or >= 1"):
        RandomForestPolicy(n_jobs=0)
    with pytest.raises(InputError, match="bad options for policy 'qasca': min_gan is not an "
                                         "option"):
        make_policy("qasca", {"min_gan": 0.1})


def test_the_json_schema_checks_builtin_policy_options() -> None:
    validator = schema_validator(docs.json_schema())
    base = {"tasks": {"count": 20}, "workers": {"count": 5},
            "budget": {"edges": 40, "batch": 10}}

    def arm(policy: dict[str, object]) -> dict[str, object]:
        return {**base, "arms": [{"name": "a", "policy": policy}]}

    validator.validate(arm({"name": "random-forest", "n_trees": 5}))
    validator.validate(arm({"name": "pkg.mod:Class", "anything": 1}))
    for bad in ({"name": "random-forest", "n_tres": 5}, {"name": "qasca", "min_gain": 2},
                {"name": "uniform", "x": 1}):
        with pytest.raises(jsonschema.ValidationError):
            validator.validate(arm(bad))


def test_random_forest_n_jobs_is_described_as_the_code_treats_it() -> None:
    """One declaration: the scenario keys and the policy's page both say it is ignored."""
    text = RandomForestPolicy.Options.model_fields["n_jobs"].description or ""
    assert text.startswith("accepted and ignored")
    pages = docs.policy_pages()
    for where, doc in (("scenario keys", docs.markdown()),
                       *((page.name, page_text) for page, page_text in pages.items())):
        rows = [line for line in doc.splitlines() if line.startswith("| `n_jobs` |")]
        assert all(text in row for row in rows), where
    assert sum(line.startswith("| `n_jobs` |") for doc in pages.values()
               for line in doc.splitlines()) == 1
    assert "| `n_jobs` |" in docs.markdown()
    assert set(docs.POLICY_OPTIONS) == {n for n, c in POLICIES.items()
                                        if c.Options.model_fields}
