"""Labels files (a person's blind scores, downloaded from review.html's blind mode): the reader accepts exactly the
files whose every line is a label of this run, on its scale, in an intact hash chain; anything else is exit 2
naming the file, the line and the field."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import BadInput, BadRecord, run_cli
from core.records import HumanLabel
from judge.gold.labels import read_labels, run_key

pytestmark = pytest.mark.unit

KEY = run_key("blinding:7:exp")
LABELS = frozenset(f"L{i:012x}" for i in range(6))
SCALE = (0, 1, 2)


def line(rec: dict) -> str:
    """The chain rule written out here, not imported: sha256 of the canonical JSON line (sorted keys, no spaces)."""
    return json.dumps(rec, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def chained(entries: list[dict], key: str = KEY) -> list[dict]:
    out, prev = [], key
    for e in entries:
        rec = {"type": "label", "version": 1, "run_key": key, "note": "", "labeller": "ann",
               "time": "2026-01-02T03:04:05.678Z", **e, "prev": prev}
        out.append(rec)
        prev = hashlib.sha256(line(rec).encode()).hexdigest()
    return out


def write(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(line(r) + "\n" for r in records), encoding="utf-8")
    return path


def refused(path: Path) -> BadInput:
    with pytest.raises(BadInput) as e:
        read_labels(path, KEY, LABELS, SCALE)
    return e.value


# any text but a lone surrogate and NUL, which no input may hold (core.jsonl.read_sealed)
notes = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), max_size=40)
entries = st.lists(st.fixed_dictionaries({"label": st.sampled_from(sorted(LABELS)), "score": st.sampled_from(SCALE),
                                          "note": notes}), min_size=1, max_size=5, unique_by=lambda e: e["label"])


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries)
def test_a_chained_file_of_this_runs_labels_reads_back_as_written(tmp_path, es):
    got = read_labels(write(tmp_path / "labels.jsonl", chained(es)), KEY, LABELS, SCALE)
    assert [(g.label, g.score, g.note) for g in got] == [(e["label"], e["score"], e["note"]) for e in es]
    assert all(isinstance(g, HumanLabel) for g in got)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries.filter(lambda es: len(es) >= 2), st.data())
def test_an_edit_insertion_removal_or_swap_breaks_the_chain_at_the_next_line(tmp_path, es, data):
    recs = chained(es)
    i = data.draw(st.integers(0, len(recs) - 2), label="record changed")  # the last line has no successor to chain it
    how = data.draw(st.sampled_from(["score", "note", "labeller", "time", "remove", "swap", "insert"]))
    if how == "score":
        recs[i]["score"] = (recs[i]["score"] + 1) % 3
    elif how == "note":
        recs[i]["note"] += "!"
    elif how == "labeller":
        recs[i]["labeller"] = "bob"
    elif how == "time":
        recs[i]["time"] = "2026-01-02T03:04:06+00:00"
    elif how == "remove":
        del recs[i]
    elif how == "swap":
        recs[i], recs[i + 1] = recs[i + 1], recs[i]
    else:
        recs.insert(i + 1, dict(recs[i], label=sorted(LABELS - {e["label"] for e in es})[0]))
    e = refused(write(tmp_path / "labels.jsonl", recs))
    want = 1 if how == "swap" and i == 0 else i + 1 if how in ("remove", "swap") else i + 2
    assert (e.line, e.field) == (want, "prev"), str(e)


@pytest.mark.parametrize("change, field, words", [
    ({"label": "L999999999999"}, "label", "not a blinded label"),
    ({"score": 3}, "score", "scale"),
    ({"score": -1}, "score", "scale"),
    ({"score": True}, "score", "not of type int"),
    ({"score": "2"}, "score", "not of type int"),
    ({"score": 1.0}, "score", "not of type int"),
    ({"run_key": run_key("blinding:7:other")}, "run_key", "another run"),
    ({"labeller": "  "}, "labeller", "empty"),
    ({"time": "yesterday"}, "time", "ISO 8601"),
    ({"time": "2026-01-02T03:04:05"}, "time", "UTC offset"),
    ({"type": "judgment"}, "type", "expected 'label'"),
    ({"version": 2}, "version", "version"),
])
def test_a_wrong_field_is_refused_naming_file_line_and_field(tmp_path, change, field, words):
    recs = chained([{"label": "L000000000000", "score": 1}, {"label": "L000000000001", "score": 2}])
    recs[1].update(change)
    path = write(tmp_path / "labels.jsonl", recs)
    e = refused(path)
    assert (e.file, e.line, e.field) == (str(path), 2, field) and words in e.message, str(e)


def test_a_missing_field_is_a_bad_record(tmp_path):
    recs = chained([{"label": "L000000000000", "score": 1}])
    del recs[0]["labeller"]
    e = refused(write(tmp_path / "labels.jsonl", recs))
    assert isinstance(e, BadRecord) and (e.line, e.field) == (1, "labeller")


def test_one_labeller_labels_an_answer_once(tmp_path):
    e = refused(write(tmp_path / "l.jsonl", chained([{"label": "L000000000000", "score": 1},
                                                     {"label": "L000000000000", "score": 2}])))
    assert (e.line, e.field) == (2, "label") and "line 1" in e.message


def test_a_cut_off_file_and_an_empty_file_are_refused(tmp_path):
    path = write(tmp_path / "l.jsonl", chained([{"label": "L000000000000", "score": 1},
                                                {"label": "L000000000001", "score": 2}]))
    path.write_bytes(path.read_bytes()[:-20])
    assert refused(path).line == 2
    (tmp_path / "empty.jsonl").write_text("")
    assert "no labels" in refused(tmp_path / "empty.jsonl").message


def test_a_lone_surrogate_is_bad_input_not_a_traceback(tmp_path):
    recs = chained([{"label": "L000000000000", "score": 1}])
    path = tmp_path / "l.jsonl"
    path.write_text(line(recs[0]).replace('"note":""', '"note":"\\ud800"') + "\n")
    assert refused(path).line == 1


def test_the_run_key_does_not_reveal_the_label_key_it_binds():
    """The label key derives every label's secret (judge.judging.blinding.label_secret = sha256 of the key): the run key
    a blind page carries must be neither the key nor that secret."""
    key = "blinding:20261130:demo"
    assert run_key(key) not in (key, hashlib.sha256(key.encode()).hexdigest())
    assert run_key(key) == run_key(key) != run_key("blinding:20261130:demo2")


def test_through_the_cli_wrapper_a_foreign_label_exits_2_naming_file_line_and_field(tmp_path, capsys):
    recs = chained([{"label": "L000000000000", "score": 1}, {"label": "Lnot-this-run", "score": 1}])
    path = write(tmp_path / "labels.jsonl", recs)
    assert run_cli(lambda: read_labels(path, KEY, LABELS, SCALE)) == 2
    err = capsys.readouterr().err
    assert f"{path}:2: field 'label':" in err and "Traceback" not in err


# ---- CSV imports: read as CSV --------------------------------------------------------------------------------

csv_notes = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
csv_rows = st.lists(st.tuples(st.sampled_from(sorted(LABELS)), st.sampled_from(SCALE), csv_notes,
                              st.sampled_from(["ann", "bob"])), min_size=1, max_size=6,
                    unique_by=lambda r: (r[0], r[3]))


def write_csv(path: Path, rows: list[tuple], quoting: int) -> Path:
    """Rows as Python's csv writer writes them (its default dialect: CRLF after each row, and a field holding CR or
    LF quoted; with another line terminator it leaves a lone CR unquoted, which no reader can tell from a row end)."""
    import csv

    with open(path, "w", encoding="utf-8", newline="") as f:
        w = csv.writer(f, quoting=quoting)
        w.writerow(["label", "score", "note", "labeller"])
        w.writerows(rows)
    return path


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(csv_rows, st.sampled_from(["QUOTE_MINIMAL", "QUOTE_ALL"]), st.booleans())
def test_a_csv_written_by_pythons_csv_writer_imports_exactly_its_rows(tmp_path, rows, quoting, bom):
    """Any text in a note (line separators such as U+2028 and U+0085, CR, LF, quotes, commas, spaces at either end)
    comes back exactly, one label per row, with or without a byte-order mark. (Before: the text was split into lines
    by str.splitlines, and a note holding U+2028, U+0085 or another of its separators broke its row.)"""
    import csv

    from judge.gold.labelling import csv_labels

    path = write_csv(tmp_path / "labels.csv", rows, getattr(csv, quoting))
    if bom:
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    got = csv_labels(path, set(LABELS), SCALE, None)
    assert [(x.label, x.score, x.note, x.labeller) for x in got] == [tuple(r) for r in rows]


def test_a_note_holding_u2028_unquoted_is_one_row_as_a_csv_reader_reads_it(tmp_path):
    """The csv writer leaves a field holding U+2028 unquoted (written out here); str.splitlines splits the row there.
    A CSV reader sees one row: one label with the whole note; where that row has more cells than the header, it is
    refused, never read as a second label."""
    from judge.gold.labelling import csv_labels

    path = tmp_path / "labels.csv"
    path.write_text("label,score,note\r\nL000000000000,1,half\u2028way\r\n", encoding="utf-8", newline="")
    got = csv_labels(path, set(LABELS), SCALE, "ann")
    assert [(x.line, x.label, x.score, x.note) for x in got] == [(2, "L000000000000", 1, "half\u2028way")]
    path.write_text("label,score,note\nL000000000000,1,ok\u2028L000000000001,0,x\nL000000000002,2,\n",
                    encoding="utf-8")
    with pytest.raises(BadInput) as e:
        csv_labels(path, set(LABELS), SCALE, "ann")
    assert (e.value.line, e.value.field) == (2, None) and "has 5 cells, the header 3" in e.value.message, e.value


# ---- a downloaded labels file is an input: decoded as every input is ------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries, st.booleans(), st.booleans())
def test_a_download_with_a_byte_order_mark_or_crlf_line_ends_reads_as_written(tmp_path, es, bom, crlf):
    path = tmp_path / "labels.jsonl"
    end = "\r\n" if crlf else "\n"
    path.write_bytes(("\ufeff" if bom else "").encode() + "".join(line(r) + end for r in chained(es)).encode())
    got = read_labels(path, KEY, LABELS, SCALE)
    assert [(g.label, g.score, g.note) for g in got] == [(e["label"], e["score"], e["note"]) for e in es]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(entries, st.data())
def test_a_lone_surrogate_in_a_download_is_refused_naming_line_and_field(tmp_path, es, data):
    recs = chained(es)
    at = data.draw(st.integers(0, len(recs) - 1), label="record")
    field = data.draw(st.sampled_from(["note", "labeller"]), label="field")
    recs[at][field] = "x" + chr(data.draw(st.integers(0xD800, 0xDFFF), label="surrogate"))
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in recs))  # escaped: JSON can spell it
    e = refused(path)
    assert (e.file, e.line, e.field) == (str(path), at + 1, field), e


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.binary(max_size=300),
                 entries.map(lambda es: "".join(line(r) + "\n" for r in chained(es)).encode()).flatmap(
                     lambda b: st.tuples(st.integers(0, len(b)), st.binary(max_size=4)).map(
                         lambda t: b[:t[0]] + t[1] + b[t[0]:]))))
def test_random_bytes_as_a_labels_file_or_a_csv_are_read_or_bad_input_never_a_traceback(tmp_path, data):
    from judge.gold.labelling import csv_labels

    path = tmp_path / "labels.jsonl"
    path.write_bytes(data)
    for read in (lambda: read_labels(path, KEY, LABELS, SCALE), lambda: csv_labels(path, set(LABELS), SCALE, "ann")):
        try:
            read()
        except BadInput as e:
            assert e.file == str(path), e
