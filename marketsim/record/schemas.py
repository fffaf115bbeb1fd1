"""The JSON Schemas of a run folder's records, generated from their models:
``summary.schema.json`` (:mod:`marketsim.record.summary_model`) and ``run.schema.json``
(:mod:`marketsim.record.run_model`), shipped beside them.

``python -m marketsim.record.schemas --write`` rewrites both;
``tests/record/test_output_schemas.py`` fails when either drifts from its model.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from marketsim.record.run_model import RunRecord
from marketsim.record.summary_model import Summary

#: Schema file -> the model it is generated from.
SCHEMAS: dict[Path, type[BaseModel]] = {
    Path(__file__).with_name("summary.schema.json"): Summary,
    Path(__file__).with_name("run.schema.json"): RunRecord,
}


def json_schema(path: Path) -> dict[str, Any]:
    """The JSON Schema written to ``path``."""
    out = SCHEMAS[path].model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"marketsim/{path.name}", **out}


def json_text(path: Path) -> str:
    """The schema file ``path`` as written."""
    return json.dumps(json_schema(path), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Print the schemas, or ``--write`` the schema files."""
    p = argparse.ArgumentParser(prog="python -m marketsim.record.schemas",
                                description=__doc__.splitlines()[0])
    p.add_argument("--write", action="store_true",
                   help="rewrite summary.schema.json and run.schema.json")
    args = p.parse_args(argv)
    for path in SCHEMAS:
        if args.write:
            path.write_text(json_text(path), encoding="utf-8")
        else:
            print(json_text(path), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
