"""Ctrl-C before a run has written any result: the interrupt is reported as one (exit 130,
"interrupted; 0 of N units kept"), not as a report error on a folder with no curves.csv yet
(the window after run.json and before the first unit: a kill at 1.63 s met it under load)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import marketsim.cli.run as run_cli
from marketsim.scenario.specs import Scenario


def test_an_interrupt_before_the_first_results_is_an_interrupt(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*_args: object, **_kwargs: object) -> None:
        (tmp_path / "run").mkdir()
        raise KeyboardInterrupt

    monkeypatch.setattr(run_cli, "run_observed", interrupted)
    args = argparse.Namespace(jobs=1, backend="process", scheduler=None, allow_imports=False,
                              no_figures=True, quiet=True, json=False)
    with pytest.raises(KeyboardInterrupt):
        run_cli._run_one(args, Scenario.model_construct(), tmp_path / "run")
