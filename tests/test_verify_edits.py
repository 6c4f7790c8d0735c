"""`judge verify` over a real results folder (the `small_run` fixture) whose documents were damaged or edited.

- Every document the run wrote (binding.json, run.json, numbers.json), read through its contract (core.records) and
  written back, is the same bytes.
- A name edited anywhere in numbers.json (a comparison's or hypothesis's id, an arm's, a judge's, a quant's: values
  and the keys of objects keyed by them) is a finding naming the edited name (exit 1), never an exception.
- Generated damage (a field dropped or given another JSON type) or edits, verified by `python -m judge verify` as a
  user runs it: exit 2 naming the file and the field for damage, exit 1 for an edit, never a traceback.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_documents import OTHER_TYPE, _fits, _typed_fields

from core.records import Binding, Numbers, RunInfo
from judge.__main__ import main

from conftest import cli

pytestmark = pytest.mark.integration

DOCUMENTS = {"binding.json": Binding, "run.json": RunInfo, "numbers.json": Numbers}
NAMED = ("id", "hypothesis", "arm", "a", "b", "judge", "primary", "quant")  # keys whose value names something
KEYED = ("judge_totals", "means", "length_bias", "pairwise", "unscored_rate", "lifts")  # objects keyed by a name
NAME = st.text(st.sampled_from("abcXYZ019-_"), min_size=1, max_size=8)
SETTINGS = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _text(doc: Any) -> str:
    return json.dumps(doc, indent=1) + "\n"


def test_every_document_of_a_run_reads_through_its_contract_and_writes_back_byte_for_byte(small_run):
    for name, cls in DOCUMENTS.items():
        text = (small_run / name).read_text()
        assert cls.read_file(small_run / name).text() == text, name


def _names(x: Any, path: tuple = ()) -> list[tuple[tuple, str]]:
    """Where numbers.json names something: (path to a string value or to a key of a keyed object, the name)."""
    out = []
    if isinstance(x, dict):
        for k, v in x.items():
            if path and path[-1] in KEYED or path[-3:-1] in (("quant_check", "means"), ("judges", "means")):
                out.append(((*path, ("key", k)), k))
            if k in NAMED and isinstance(v, str):
                out.append(((*path, k), v))
            out += _names(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            if path and path[-1] == "panel" and isinstance(v, str):
                out.append(((*path, i), v))
            out += _names(v, (*path, i))
    return out


def _renamed(doc: Any, path: tuple, new: str) -> None:
    *where, last = path
    for p in where:
        doc = doc[p]
    if isinstance(last, tuple):  # a key: renamed in place, the object's order kept
        items = [(new if k == last[1] else k, v) for k, v in doc.items()]
        doc.clear()
        doc.update(items)
    else:
        doc[last] = new


@st.composite
def _edit(draw, numbers: dict) -> tuple[dict, tuple, str]:
    """numbers.json with one name edited: (the document, where, the new name)."""
    doc = json.loads(json.dumps(numbers))
    path, old = draw(st.sampled_from(_names(doc)))
    new = draw(NAME.filter(lambda n: n != old))
    _renamed(doc, path, new)
    return doc, path, new


@pytest.fixture
def folder(small_run, tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(small_run, d)
    return d


def test_every_kind_of_name_is_found_in_the_fixtures_numbers(small_run):
    """The edits below reach every kind of name: otherwise they would prove less than they say."""
    numbers = json.loads((small_run / "numbers.json").read_text())
    kinds = {p[-1] if not isinstance(p[-1], (tuple, int)) else p[-2] for p, _ in _names(numbers)}
    assert {"id", "hypothesis", "arm", "a", "b", "judge", "primary", "panel", "judge_totals", "means"} <= kinds, kinds


@settings(SETTINGS, max_examples=6)
@given(data=st.data())
def test_an_edited_name_in_numbers_json_is_a_finding_naming_it(folder, capsys, data):
    numbers = json.loads((folder / "numbers.json").read_text())
    doc, path, new = data.draw(_edit(numbers))
    (folder / "numbers.json").write_text(_text(doc))
    capsys.readouterr()
    try:
        assert main(["verify", str(folder), "--no-cache"]) == 1
        err = capsys.readouterr().err
        assert any(new in line for line in err.splitlines() if line.startswith("  - ")), err
        if path[0] == "comparisons" and path[2:] == ("id",):  # named first, with what was expected
            assert (f"numbers.json comparisons[{path[1]}] is named {new!r}: no registered hypothesis of this run is; "
                    f"expected {numbers['comparisons'][path[1]]['id']!r}") in err, err
    finally:
        (folder / "numbers.json").write_text(_text(numbers))


@st.composite
def _damage(draw, folder: Path) -> tuple[str, str, str | None]:
    """(file, its damaged or edited text, the field an exit 2 must name; None: an edit, exit 1)."""
    if draw(st.booleans()):
        doc, _, _ = draw(_edit(json.loads((folder / "numbers.json").read_text())))
        return "numbers.json", _text(doc), None
    name = draw(st.sampled_from(sorted(DOCUMENTS)))
    doc = json.loads((folder / name).read_text())
    fields = [f for f in _typed_fields(doc, DOCUMENTS[name]) if f[1] is not Any]
    where, hint, required, holder, key = draw(st.sampled_from(fields))
    if required and draw(st.booleans()):
        del holder[key]
    else:
        holder[key] = draw(st.sampled_from([v for v in OTHER_TYPE.values() if not _fits(v, hint)]))
    return name, _text(doc), where


@settings(SETTINGS, max_examples=4)
@given(data=st.data())
def test_verify_as_a_user_runs_it_never_shows_a_traceback_over_damaged_or_edited_documents(folder, data):
    name, text, field = data.draw(_damage(folder))
    before = (folder / name).read_text()
    (folder / name).write_text(text)
    try:
        r = cli("judge", "verify", str(folder), "--no-cache", timeout=300)
    finally:
        (folder / name).write_text(before)
    assert "Traceback" not in r.stderr, r.stderr
    if field is None:
        assert r.returncode == 1, r.stderr
    else:
        assert r.returncode == 2 and r.stderr.startswith(f"error: {folder / name}: field '{field}':"), r.stderr


def test_an_edited_stability_number_is_named_by_both_paths(folder, capsys):
    numbers = json.loads((folder / "numbers.json").read_text())
    cell = numbers["stability"]["cells"][1]
    cell["pass_hat_k"]["ci_high"] = cell["pass_hat_k"]["ci_high"] + 0.25
    (folder / "numbers.json").write_text(_text(numbers))
    capsys.readouterr()
    assert main(["verify", str(folder), "--no-cache"]) == 1
    err = capsys.readouterr().err
    where = f"stability.cells[{cell['arm']}/{cell['quant']}].pass_hat_k.ci_high"
    assert f"{where} = {cell['pass_hat_k']['ci_high']!r}, but the recomputation from raw files gives" in err, err
    assert f"{where} = {cell['pass_hat_k']['ci_high']!r}, but the independent plain-Python recomputation gives" in err


def test_a_numbers_json_written_before_stability_was_measured_still_verifies(folder, capsys):
    from judge.outputs.report import folder_report

    numbers = json.loads((folder / "numbers.json").read_text())
    del numbers["stability"]
    (folder / "numbers.json").write_text(_text(numbers))
    (folder / "report.md").write_text(folder_report(folder))  # as that version rendered it
    assert "## Stability across samples" not in (folder / "report.md").read_text()
    capsys.readouterr()
    assert main(["verify", str(folder), "--no-cache"]) == 0
    assert "no stability (written before pass^k" in capsys.readouterr().out
