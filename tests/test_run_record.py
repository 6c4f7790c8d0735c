"""run.json and binding.json constructed by their writers, not read: the same fields give the bytes an
earlier version wrote, field for field in the file's order; a field whose type allows None is written null, one whose
type does not is left out when None (absent, as older files have it)."""
from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path

import pytest

from core.records import Binding, RunInfo

pytestmark = pytest.mark.unit

LEGACY = Path(__file__).parent / "data" / "legacy" / "out"


def rebuilt(cls, path: Path):
    """The document at `path` built again from the values its contract reads, its sections as read."""
    doc = cls.read_file(path)
    written = json.loads(path.read_text())
    return cls(**{f.name: getattr(doc, f.name) for f in fields(cls) if f.name in written})


def test_run_json_built_from_its_fields_is_the_file_an_earlier_version_wrote():
    text = (LEGACY / "run.json").read_text()
    assert "contamination" not in json.loads(text)  # absent: the gate was not registered
    assert rebuilt(RunInfo, LEGACY / "run.json").text() == text


def test_a_field_absent_when_none_is_left_out_and_one_null_when_none_is_written_null():
    doc = RunInfo.read_file(LEGACY / "run.json")
    values = {f.name: getattr(doc, f.name) for f in fields(RunInfo) if f.name != "written"}
    out = json.loads(RunInfo(**{**values, "contamination": None, "cost_estimate": None, "limit": None}).text())
    assert "contamination" not in out and "cost_estimate" not in out and out["limit"] is None
    assert list(out) == [f.name for f in fields(RunInfo) if f.name in out]  # in the contract's, the file's, order


def test_a_new_binding_is_written_in_the_order_binding_json_holds(tmp_path):
    path = tmp_path / "binding.json"
    planted = ('{\n "schema": 1,\n "created": "t",\n "experiment": "e",\n "experiment_dir": "/x",\n "label_key": "k",\n'
               ' "blinding_secret_sha256": "s",\n "registration": {\n  "a": "1"\n },\n "scope": {\n  "arms": [\n'
               '   "base"\n  ],\n  "limit": null\n },\n "amendments": null,\n "history": []\n}\n')
    path.write_text(planted)
    assert rebuilt(Binding, path).text() == planted
