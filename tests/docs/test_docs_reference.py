"""The site's generated reference (``docs/_ext/marketsim_reference.py``), without Sphinx: what
each page's marker turns into covers every subcommand, public name, scenario table and record
key, from the code itself."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

import marketsim
import marketsim.aggregation
from marketsim.cli import COMMAND_MODULES
from marketsim.scenario.docs import TABLES, settings_tables

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT / "docs" / "reference"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    path = ROOT / "docs" / "_ext" / "marketsim_reference.py"
    spec = importlib.util.spec_from_file_location("marketsim_reference", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_generated_page_is_a_stub_with_a_known_marker(generator: ModuleType) -> None:
    markers = {}
    for page in sorted(REFERENCE.glob("*.md")):
        found = generator.MARKER.findall(page.read_text(encoding="utf-8"))
        if found:
            markers[page.stem] = found
    assert markers == {"cli": ["cli"], "scenario-keys": ["scenario-keys"],
                       "python-api": ["python-api"], "output-files": ["output-files"]}
    assert set(generator.GENERATORS) == {name for found in markers.values() for name in found}


def test_cli_page_has_every_subcommand_help(generator: ModuleType) -> None:
    text = generator.fill("<!-- generated: cli -->")
    assert "usage: marketsim [-h]" in text
    for command in COMMAND_MODULES:
        assert f"## `marketsim {command}`" in text
        assert f"usage: marketsim {command}" in text
    assert "--allow-imports" in text and "--resume" in text
    import marketsim.errors as errors

    for name, value in vars(errors).items():
        if name.startswith("EXIT_"):
            assert f"| {value} | `{name}` |" in text
    assert "disk full" in text  # EXIT_IO_ERROR's own comment


def test_api_page_documents_every_public_name(generator: ModuleType) -> None:
    text = generator.api_markdown()
    for module in (marketsim, marketsim.aggregation):
        assert f".. automodule:: {module.__name__}" in text
        for name in module.__all__:
            if name == "__version__":
                continue
            assert any(line.endswith(f":: {name}") for line in text.splitlines()), name
    # a constant is documented by its ``#:`` comment, not by the docstring of ``dict``
    methods = text.split(".. py:data:: METHODS", 1)[1].split("\n\n", 2)[1]
    assert "inference method" in methods and "dict()" not in methods


def test_scenario_keys_page_has_every_table_one_level_below_the_title(
        generator: ModuleType) -> None:
    text = generator.scenario_markdown()
    for heading, _ in TABLES + settings_tables():
        assert f"\n## {heading}\n" in text
    assert "\n### " not in text and "<!--" not in text


def test_output_files_page_has_every_key_of_the_shipped_schemas(generator: ModuleType) -> None:
    text = generator.output_markdown()
    record = ROOT / "marketsim" / "record"
    for name in ("summary", "run"):
        schema = json.loads((record / f"{name}.schema.json").read_text(encoding="utf-8"))
        assert f"## `{name}.json`" in text
        for key in schema["properties"]:
            assert f"| `{key}` |" in text
        for table in schema.get("$defs", {}):
            assert f"### {table}" in text
    headings = [line for line in text.splitlines() if line.startswith("#")]
    assert len(headings) == len(set(headings))  # one anchor each
