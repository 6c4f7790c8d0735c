"""A bundle carries the JSON Schema of each document it holds, and `judge verify` on a bundle checks each document
against the schema carried and that schema against the one the contracts generate.

The bundle here is published from tests/data/version1 (a results folder of the previous version, nothing private):
its documents are read migrated, so it also shows a bundle of an older folder verifying.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from core.records import Binding, BundleInfo, Numbers, PublicQuestion, RunInfo
from core.records.schema import schema
from judge.verify.bundle_check import verify_bundle
from judge.verify.publish import publish

pytestmark = pytest.mark.unit

VERSION1 = Path(__file__).parent / "data" / "version1"
CARRIED = {"bundle": BundleInfo, "binding": Binding, "run": RunInfo, "numbers": Numbers, "question": PublicQuestion}


@pytest.fixture
def bundle(tmp_path) -> Path:
    exp, out = shutil.copytree(VERSION1 / "exp", tmp_path / "exp"), shutil.copytree(VERSION1 / "out", tmp_path / "out")
    return publish(out, tmp_path / "bundle", exp)


def test_a_bundle_carries_the_schema_of_each_document_and_verifies(bundle):
    for name, contract in CARRIED.items():
        assert json.loads((bundle / "schemas" / f"{name}.schema.json").read_text()) == schema(contract)
    # each document is valid under the schema it carries, by the peer validator as well
    numbers = json.loads((bundle / "results" / "numbers.json").read_text())
    jsonschema.validate(numbers, json.loads((bundle / "schemas" / "numbers.schema.json").read_text()))
    assert json.loads((bundle / "BUNDLE.json").read_text())["version"] == 3
    v = verify_bundle(bundle, caches=[])
    assert v.problems == [], v.problems
    assert [m.split(":")[0] for m in v.migrated] == ["run.json", "numbers.json"]


def test_an_edited_schema_is_caught_and_the_document_is_checked_against_it(bundle):
    """A schema made to say numbers.json's `questions` is a string: it differs from the generated one (finding one),
    and the published numbers.json, whose `questions` is 3, breaks it (finding two)."""
    path = bundle / "schemas" / "numbers.schema.json"
    carried = json.loads(path.read_text())
    carried["properties"]["questions"] = {"type": "string"}
    path.write_text(json.dumps(carried, indent=1) + "\n")
    problems = verify_bundle(bundle, caches=[]).problems
    assert any(p.startswith(f"{path}: differs from the JSON Schema this blindeval generates") for p in problems)
    assert any(p.startswith(f"{bundle / 'results' / 'numbers.json'}: field 'questions': reads 3, which is not of type "
                            "string")
               for p in problems), problems


def test_a_loosened_schema_is_caught_though_every_document_passes_it(bundle):
    path = bundle / "schemas" / "run.schema.json"
    carried = json.loads(path.read_text())
    del carried["required"]
    path.write_text(json.dumps(carried, indent=1) + "\n")
    problems = verify_bundle(bundle, caches=[]).problems
    assert problems == [f"{path}: differs from the JSON Schema this blindeval generates from the contract of "
                        "results/run.json (core.records.schema): edited since `judge publish` wrote it, or written by "
                        "a blindeval whose contracts differ"]


def test_a_missing_schema_is_caught(bundle):
    (bundle / "schemas" / "binding.schema.json").unlink()
    problems = verify_bundle(bundle, caches=[]).problems
    assert any("binding.schema.json: missing" in p for p in problems), problems


def test_a_bundle_of_the_previous_version_carries_none_and_says_so(bundle):
    shutil.rmtree(bundle / "schemas")
    doc = json.loads((bundle / "BUNDLE.json").read_text())
    (bundle / "BUNDLE.json").write_text(json.dumps({**doc, "version": 2}, indent=1) + "\n")
    v = verify_bundle(bundle, caches=[])
    assert v.problems == []
    assert any("a bundle of version 2 carries no JSON Schemas" in u for u in v.unchecked)


def test_a_schema_that_cannot_be_applied_is_a_finding_not_a_traceback(bundle):
    path = bundle / "schemas" / "numbers.schema.json"
    path.write_text(json.dumps({"$ref": "#/$defs/nowhere"}) + "\n")
    problems = verify_bundle(bundle, caches=[]).problems
    assert any(p.startswith(f"{bundle / 'results' / 'numbers.json'}: the JSON Schema the bundle carries for it cannot "
                            "be applied") for p in problems), problems
    assert any(p.startswith(f"{path}: differs from the JSON Schema") for p in problems)
