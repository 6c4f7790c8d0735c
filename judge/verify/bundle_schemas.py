"""The JSON Schemas a bundle carries: one per document it holds (core.records.schema, generated from the contracts),
so that a reader without blindeval checks each file by the same rule as blindeval's reader.

`judge publish` writes them to schemas/NAME.schema.json; `judge verify BUNDLE` checks each document against the
schema the bundle carries, and that schema against the one this blindeval generates from its contracts: a schema
edited to pass an edited document is caught by the second, a document that breaks its schema by the first. A bundle
published before bundles carried schemas (BUNDLE.json version 2 or earlier) is said to carry none, not a finding.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core import jsonl
from core.records.conform import violation
from core.records.schema import CONTRACTS, schema

SCHEMAS_DIR = "schemas"
SINCE = 3  # the first BUNDLE.json version whose bundles carry them
# each schema a bundle carries, by its name in core.records.schema.CONTRACTS: the file it describes, in the bundle
DESCRIBED = {"bundle": "BUNDLE.json", "binding": "results/binding.json", "run": "results/run.json",
             "numbers": "results/numbers.json", "question": "questions.jsonl"}


def schema_file(name: str) -> str:
    return f"{SCHEMAS_DIR}/{name}.schema.json"


def schema_text(name: str) -> str:
    """A schema as a bundle carries it: the one generated from the contract, as JSON (indent 1, one newline)."""
    return json.dumps(schema(CONTRACTS[name]), indent=1) + "\n"


def write_schemas(bundle: Path) -> None:
    """Every schema a bundle carries, into `bundle` (the bundle's folder, being written)."""
    (bundle / SCHEMAS_DIR).mkdir(parents=True, exist_ok=True)
    for name in DESCRIBED:
        (bundle / schema_file(name)).write_text(schema_text(name), encoding="utf-8")


def _documents(path: Path) -> list[tuple[str, Any]]:
    """(where, JSON value) of each document in `path`: a JSON file whole, a JSONL file line by line. A file that is
    not JSON is left to the checks that read it (its contract's, with the file and line)."""
    if path.suffix == ".jsonl":
        return [(f"{path}:{no}", rec) for no, rec in jsonl.read(path)]
    try:
        return [(str(path), jsonl.loads(path.read_text(encoding="utf-8")))]
    except (ValueError, UnicodeDecodeError):
        return []


def _violations(where: str, doc: Any, carried: dict[str, Any]) -> list[str]:
    """The first place `doc` breaks the schema the bundle carries for it (core.records.conform, the check the review
    page makes too), as a finding."""
    try:
        found = violation(doc, carried)
    except (ValueError, KeyError, TypeError, AttributeError) as e:  # a carried schema that cannot be applied
        return [f"{where}: the JSON Schema the bundle carries for it cannot be applied ({type(e).__name__}: "
                f"{str(e)[:200]})"]
    if found is None:
        return []
    path, what = found
    return [f"{where}: field {path or '(the document)'!r}: {what[:200]}, against the JSON Schema the bundle carries"]


def schema_findings(bundle: Path, version: int) -> tuple[list[str], list[str]]:
    """(findings, unchecked): each document of a bundle against the schema it carries, and each carried schema
    against the one this blindeval generates. `version`: BUNDLE.json's."""
    if version < SINCE:
        return [], [f"{bundle / SCHEMAS_DIR}: a bundle of version {version} carries no JSON Schemas (published before "
                    "bundles carried them): each document is checked by its contract only"]
    out = []
    for name, described in DESCRIBED.items():
        path = bundle / schema_file(name)
        if not path.is_file():
            out.append(f"{path}: missing: a bundle of version {version} carries the JSON Schema of {described}")
            continue
        try:
            carried = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, UnicodeDecodeError) as e:
            out.append(f"{path}: not a JSON Schema ({str(e).splitlines()[0][:200]})")
            continue
        if not isinstance(carried, dict):
            out.append(f"{path}: not a JSON Schema (an object)")
            continue
        if carried != schema(CONTRACTS[name]):
            out.append(f"{path}: differs from the JSON Schema this blindeval generates from the contract of "
                       f"{described} (core.records.schema): edited since `judge publish` wrote it, or written by a "
                       "blindeval whose contracts differ")
        if (bundle / described).is_file():
            for where, doc in _documents(bundle / described):
                out += _violations(where, doc, carried)
    return out, []
