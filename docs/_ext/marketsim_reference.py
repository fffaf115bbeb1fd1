"""The site's generated reference: each page under ``docs/reference/`` that holds only a marker
line gets its text from the code at build time (Sphinx's ``source-read`` event), so the
reference cannot drift from what it describes:

- ``cli``: every subcommand's ``--help``, from the argparse parsers
  (:func:`marketsim.cli.build_parser`);
- ``scenario-keys``: every scenario table and key (:func:`marketsim.scenario.docs.markdown`);
- ``python-api``: autodoc directives for every name in ``marketsim.__all__`` and
  ``marketsim.aggregation.__all__``;
- ``output-files``: the run folder's records, from the shipped JSON Schemas
  (``marketsim/record/*.schema.json``) and the scenario schema;

Nothing is written to the source folder.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

#: The line a stub page holds where the generated text goes: ``<!-- generated: NAME -->``.
MARKER = re.compile(r"^<!-- generated: ([a-z-]+) -->$", re.MULTILINE)
#: Width of the generated ``--help`` text (argparse reads ``COLUMNS``).
HELP_WIDTH = 90


def _subcommands(parser: argparse.ArgumentParser, prefix: str
                 ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """(full command, parser) for ``parser`` and every subcommand under it, depth first."""
    yield prefix, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _subcommands(sub, f"{prefix} {name}")


def cli_markdown() -> str:
    """One section per command: its ``--help`` as argparse prints it."""
    from marketsim.cli import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = str(HELP_WIDTH)
    try:
        out = []
        for command, parser in _subcommands(build_parser(), "marketsim"):
            text = parser.format_help().rstrip()
            out += [f"## `{command}`", "", "```text", text, "```", ""]
    finally:
        if old is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(out + exit_codes())


def exit_codes() -> list[str]:
    """A table of the exit statuses, from :mod:`marketsim.errors`' ``EXIT_*`` constants: each
    one's ``#:`` comment, else its name in words."""
    import marketsim.errors as errors

    lines = ["## Exit codes", "", "| status | constant | meaning |", "|---|---|---|"]
    codes = sorted((value, name) for name, value in vars(errors).items()
                   if name.startswith("EXIT_") and isinstance(value, int))
    for value, name in codes:
        words = data_doc("marketsim.errors", name, value) or \
            name.removeprefix("EXIT_").replace("_", " ").lower()
        lines.append(f"| {value} | `{name}` | {_cell(words)} |")
    return lines


def scenario_markdown() -> str:
    """The scenario key tables, one level below the page's title."""
    from marketsim.scenario.docs import markdown

    return "\n" + re.sub(r"^### ", "## ", markdown(), flags=re.MULTILINE)


def public_names(module_name: str) -> list[tuple[str, Any]]:
    """(name, object) for each name in the module's ``__all__``."""
    import importlib

    module = importlib.import_module(module_name)
    return [(name, getattr(module, name)) for name in module.__all__]


def data_doc(module_name: str, name: str, obj: Any) -> str:
    """The ``#:`` comment above ``name`` in the module of package ``module_name`` that assigns
    it (a dict's own docstring would say what a dict is, not what this one holds)."""
    import sys

    assigned = re.compile(rf"^{re.escape(name)}\s*[:=]")
    for loaded in sorted(m for m in sys.modules if m.startswith(module_name)):
        if getattr(sys.modules[loaded], name, None) is not obj:
            continue
        source = getattr(sys.modules[loaded], "__file__", None) or ""
        if not source.endswith(".py"):
            continue
        lines = Path(source).read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines):
            if assigned.match(line):
                comment = []
                while number > 0 and lines[number - 1].startswith("#:"):
                    number -= 1
                    comment.insert(0, lines[number][2:].strip())
                if comment:
                    return "\n".join(comment)
    return ""


def _autodoc(module_name: str, name: str, obj: Any) -> list[str]:
    """The autodoc directive for one public name (a constant: its ``#:`` comment)."""
    if inspect.isclass(obj):
        if issubclass(obj, Warning):
            return [f".. autoexception:: {name}"]
        return [f".. autoclass:: {name}", "   :members:"]
    if callable(obj):
        return [f".. autofunction:: {name}"]
    doc = data_doc(module_name, name, obj)
    return [f".. py:data:: {name}", "", *(f"   {line}" for line in doc.splitlines())]


def api_markdown() -> str:
    """A section per public module with an autodoc entry for every name of its ``__all__``."""
    out = []
    for module_name, title in (("marketsim", "Studies: `marketsim`"),
                               ("marketsim.aggregation", "Label aggregation: "
                                                          "`marketsim.aggregation`")):
        out += [f"## {title}", "", "```{eval-rst}", f".. automodule:: {module_name}",
                "   :no-members:", "", f".. currentmodule:: {module_name}", ""]
        for name, obj in public_names(module_name):
            if name.startswith("__"):
                continue
            out += [*_autodoc(module_name, name, obj), ""]
        out += ["```", ""]
    return "\n".join(out)


def _type_text(prop: dict[str, Any]) -> str:
    """A JSON Schema property's type as a reader says it (``integer``, ``array of Interval``)."""
    if "$ref" in prop:
        return f"`{prop['$ref'].rsplit('/', 1)[-1]}` (below)"
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return "one of " + ", ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    if "anyOf" in prop:
        return " or ".join(_type_text(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        items = prop.get("items") or prop.get("prefixItems") or {}
        if isinstance(items, list):
            return "array of " + ", ".join(_type_text(i) for i in items)
        return f"array of {_type_text(items)}" if items else "array"
    if kind == "object" and isinstance(prop.get("additionalProperties"), dict):
        return f"object of {_type_text(prop['additionalProperties'])}"
    return str(kind)


def _cell(text: str) -> str:
    """``text`` made safe for one cell of a Markdown table."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _properties_table(schema: dict[str, Any]) -> list[str]:
    """One table of an object schema's keys: key, type, required, meaning."""
    required = set(schema.get("required", []))
    lines = ["| key | type | required | meaning |", "|---|---|---|---|"]
    for key, prop in schema.get("properties", {}).items():
        lines.append(f"| `{key}` | {_cell(_type_text(prop))} | "
                     f"{'yes' if key in required else 'no'} | "
                     f"{_cell(prop.get('description', ''))} |")
    return lines


def schema_markdown(path: Path, title: str) -> list[str]:
    """A section for one record file: its top-level keys, then each table it refers to."""
    schema = json.loads(path.read_text(encoding="utf-8"))
    out = [f"## {title}", "", _cell(schema.get("description", "")), "",
           f"Schema: `marketsim/{path.parent.name}/{path.name}` (JSON Schema 2020-12).", "",
           *_properties_table(schema), ""]
    for name, sub in schema.get("$defs", {}).items():
        out += [f"### {name}", "", _cell(sub.get("description", "")), ""]
        if "properties" in sub:
            out += [*_properties_table(sub), ""]
    return out


def output_markdown() -> str:
    """The run folder's JSON records, from their shipped schemas."""
    import marketsim.record

    record = Path(marketsim.record.__file__).parent
    out = [*schema_markdown(record / "summary.schema.json", "`summary.json`"),
           *schema_markdown(record / "run.schema.json", "`run.json`")]
    return "\n".join(_unique_headings(out))


def _unique_headings(lines: list[str]) -> list[str]:
    """The two schemas share table names (``Interval``): the second gets a suffix, so that
    each heading has its own anchor."""
    seen: set[str] = set()
    out: list[str] = []
    suffix = ""
    for line in lines:
        if line.startswith("## "):
            suffix = "" if not seen else f" ({line[3:].strip('`')})"
        if line.startswith("### "):
            name = line[4:]
            if name in seen:
                line = f"### {name}{suffix}"
            seen.add(name)
        out.append(line)
    return out


#: Marker name -> its generator.
GENERATORS: dict[str, Callable[[], str]] = {
    "cli": cli_markdown,
    "scenario-keys": scenario_markdown,
    "python-api": api_markdown,
    "output-files": output_markdown,
}


def fill(text: str) -> str:
    """``text`` with each marker line replaced by its generated Markdown."""
    return MARKER.sub(lambda m: GENERATORS[m.group(1)](), text)


def _on_source_read(app: Any, docname: str, source: list[str]) -> None:
    if MARKER.search(source[0]):
        source[0] = fill(source[0])


def setup(app: Any) -> dict[str, Any]:
    """Register the generator with Sphinx."""
    app.connect("source-read", _on_source_read)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
