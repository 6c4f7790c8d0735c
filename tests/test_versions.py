"""Document versions: numbers.json and run.json carry one, an older file is migrated before its contract reads it.

tests/data/version1 is a results folder the previous version of blindeval wrote (`judge run` against the scripted
server, its experiment beside it): numbers.json says `"schema": 1`, run.json carries no version. It still verifies,
with its migration said, and an edit to it is still caught.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.errors import BadRecord
from core.records import Numbers, RunInfo
from core.records.migrate import STEPS, upgrade
from judge.verify.checks import verify

from conftest import cli

VERSION1 = Path(__file__).parent / "data" / "version1"


@pytest.fixture
def folder(tmp_path) -> tuple[Path, Path]:
    """(experiment, results folder): a copy of tests/data/version1 a test may edit."""
    return shutil.copytree(VERSION1 / "exp", tmp_path / "exp"), shutil.copytree(VERSION1 / "out", tmp_path / "out")


def edit(path: Path, change) -> None:
    """Rewrite a JSON document as `judge run` writes it (indent 1), changed by `change`."""
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(change(doc), indent=1) + "\n")


@pytest.mark.unit
def test_the_fixture_is_of_the_previous_version():
    numbers = json.loads((VERSION1 / "out" / "numbers.json").read_text())
    run = json.loads((VERSION1 / "out" / "run.json").read_text())
    assert numbers["schema"] == 1 and "version" not in run


@pytest.mark.unit
def test_a_version_1_document_is_read_migrated_and_says_so():
    path = VERSION1 / "out" / "numbers.json"
    written = json.loads(path.read_text())
    doc = Numbers.read_file(path)
    assert doc.schema == 2 and doc.to_dict()["schema"] == 2
    assert [(m.file, m.version, m.to) for m in doc.migrated] == [("numbers.json", 1, 2)]
    # nothing but the version changes: every other key as written, in order
    assert {k: v for k, v in doc.to_dict().items() if k != "schema"} == {k: v for k, v in written.items()
                                                                          if k != "schema"}
    run = RunInfo.read_file(VERSION1 / "out" / "run.json")
    assert run.version == 2 and list(run.to_dict())[0] == "version"
    assert [(m.file, m.version, m.to) for m in run.migrated] == [("run.json", 1, 2)]
    assert str(run.migrated[0]).startswith("run.json: written as version 1, read as version 2: ")


@pytest.mark.unit
def test_a_document_of_this_version_is_read_as_written(tmp_path):
    path = tmp_path / "numbers.json"
    written = json.loads((VERSION1 / "out" / "numbers.json").read_text())
    path.write_text(json.dumps({**written, "schema": 2}, indent=1) + "\n")
    doc = Numbers.read_file(path)
    assert doc.migrated == () and doc.text() == path.read_text()  # the same bytes: the anchor depends on it


@pytest.mark.unit
def test_a_later_version_is_refused_naming_the_field(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({**json.loads((VERSION1 / "out" / "run.json").read_text()), "version": 3}))
    with pytest.raises(BadRecord) as e:
        RunInfo.read_file(path)
    assert e.value.field == "version" and "version 1 to 2" in str(e.value)


@pytest.mark.unit
def test_steps_chain_by_version():
    """A step per version, each old dict -> new dict; a document with no step onward stays as it is."""
    steps = dict(STEPS)
    try:
        STEPS[("Numbers", 2)] = type(STEPS[("Numbers", 1)])("planted", lambda d: {**d, "schema": 3, "added": True})
        d, taken = upgrade("Numbers", {"schema": 1, "x": 0}, "schema", 3, "numbers.json")
        assert d == {"schema": 3, "x": 0, "added": True} and [(m.version, m.to) for m in taken] == [(1, 2), (2, 3)]
        assert upgrade("BundleInfo", {"version": 1}, "version", 2, "BUNDLE.json") == ({"version": 1}, ())
    finally:
        STEPS.clear()
        STEPS.update(steps)


@pytest.mark.integration
def test_a_folder_written_by_the_previous_version_verifies_with_its_migration_said(folder):
    exp, out = folder
    r = cli("judge", "verify", str(out), "--exp", str(exp), "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "migrated: run.json: written as version 1, read as version 2" in r.stdout
    assert "migrated: numbers.json: written as version 1, read as version 2" in r.stdout
    assert "mismatch" not in r.stdout + r.stderr


@pytest.mark.unit
def test_an_edited_number_in_a_version_1_folder_is_caught(folder):
    exp, out = folder
    # base/served: scores 1, 2, 2 on its three questions (score_counts), so its mean is 5/3
    edit(out / "numbers.json", lambda n: {**n, "cells": [{**c, "mean": 2.0} if c["arm"] == "base" else c
                                                         for c in n["cells"]]})
    v = verify(out, exp, [])
    assert any(p.startswith("numbers.json cells[base/served].mean = 2.0, but the recomputation") for p in v.problems)
    assert json.loads((out / "numbers.json").read_text())["schema"] == 1  # still an old file, still migrated
    assert len(v.migrated) == 2


@pytest.mark.unit
@pytest.mark.parametrize("document, change", [
    ("numbers.json", lambda n: {**n, "schema": 2}),
    ("run.json", lambda r: {"version": 2, **r}),
])
def test_a_version_edited_in_one_document_is_caught(folder, document, change):
    """run.json and numbers.json are written by one run, of one version: a version edited in either is a finding."""
    exp, out = folder
    edit(out / document, change)
    v = verify(out, exp, [])
    assert any("written as version 2, but run.json as version 1" in p or
               "written as version 1, but run.json as version 2" in p for p in v.problems), v.problems
    assert len(v.migrated) == 1


@pytest.mark.unit
def test_the_previous_version_folder_verifies_in_process(folder):
    exp, out = folder
    v = verify(out, exp, [])
    assert v.problems == [] and [m.split(":")[0] for m in v.migrated] == ["run.json", "numbers.json"]


@pytest.mark.unit
def test_an_explicit_version_1_is_migrated_like_an_absent_one():
    run = json.loads((VERSION1 / "out" / "run.json").read_text())
    d, taken = upgrade("RunInfo", {"version": 1, **run}, "version", 2, "run.json")
    assert d == {"version": 2, **run} and list(d)[0] == "version" and len(taken) == 1


@pytest.mark.unit
def test_a_step_that_does_not_raise_the_version_is_refused():
    steps = dict(STEPS)
    try:
        STEPS[("Numbers", 1)] = type(STEPS[("Numbers", 1)])("planted", lambda d: d)
        with pytest.raises(ValueError):
            upgrade("Numbers", {"schema": 1}, "schema", 2, "numbers.json")
    finally:
        STEPS.clear()
        STEPS.update(steps)
