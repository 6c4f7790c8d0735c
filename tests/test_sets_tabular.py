"""Question sets in CSV and parquet: written by pandas, pyarrow and the csv module's writer, read through a registered
column mapping into the same questions as the equivalent JSON lines; any text a cell may hold comes back as written;
a bad row is refused naming the file, the row (a CSV row's first line, a parquet row's index) and the file's column."""
from __future__ import annotations

import csv
import io
import json
import re

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_readme import _example

from core.errors import BadInput
from registration.prereg import load_experiment
from registration.questions import SetFormat, load_questions

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
MAPPING = SetFormat((("id", "qid"), ("question", "prompt"), ("reference", "answer"), ("tags", "labels"),
                     ("cluster", "topic")), tag_separator="|")
ID_QUESTION = SetFormat((("id", "qid"), ("question", "prompt")))  # the other fields from columns of their names
RECORDS = [
    {"id": "a1", "question": "What is 2 + 2, in words?", "reference": "four", "tags": ["arith", "easy"],
     "cluster": "c1"},
    {"id": "a2", "question": 'Quote "this",\nthen a second line', "reference": None, "tags": [], "cluster": None},
    {"id": "a3", "question": "Line\u2028separator and caf\u00e9", "reference": "x, y", "tags": ["easy"],
     "cluster": "c1"},
]


def _fields(questions):
    return [(q.id, q.question, q.reference, q.tags, q.cluster) for q in questions]


def _frame(tags_as_lists: bool) -> pd.DataFrame:
    return pd.DataFrame({
        "qid": [r["id"] for r in RECORDS], "prompt": [r["question"] for r in RECORDS],
        "answer": [r["reference"] for r in RECORDS],
        "labels": [r["tags"] if tags_as_lists else "|".join(r["tags"]) for r in RECORDS],
        "topic": [r["cluster"] for r in RECORDS],
    })


@pytest.fixture
def jsonl_questions(tmp_path):
    p = tmp_path / "exam.jsonl"
    p.write_text("".join(json.dumps({k: v for k, v in r.items() if v is not None}) + "\n" for r in RECORDS))
    return _fields(load_questions([p]))


def test_a_csv_set_written_by_pandas_reads_as_its_jsonl(tmp_path, jsonl_questions):
    p = tmp_path / "exam.csv"
    _frame(tags_as_lists=False).to_csv(p, index=False)
    got = load_questions([p], {p: MAPPING})
    assert _fields(got) == jsonl_questions
    # each row's first line, counted by hand: the header is line 1, a2's question spans lines 3 and 4
    assert [q.line for q in got] == [2, 3, 5] and {q.set for q in got} == {"exam.csv"}


def test_a_csv_set_with_a_byte_order_mark_and_crlf_reads_the_same(tmp_path, jsonl_questions):
    p = tmp_path / "exam.csv"
    p.write_bytes(b"\xef\xbb\xbf" + _frame(tags_as_lists=False).to_csv(index=False, lineterminator="\r\n").encode())
    assert _fields(load_questions([p], {p: MAPPING})) == jsonl_questions


@pytest.mark.parametrize("tags_as_lists", [True, False])
def test_a_parquet_set_reads_as_its_jsonl(tmp_path, jsonl_questions, tags_as_lists):
    p = tmp_path / "exam.parquet"
    _frame(tags_as_lists).to_parquet(p, index=False)
    got = load_questions([p], {p: MAPPING})
    assert _fields(got) == jsonl_questions and [q.line for q in got] == [0, 1, 2]


def test_unmapped_fields_are_read_from_columns_of_their_own_names(tmp_path):
    p = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"id": ["x", "y"], "question": ["q?", "r?"], "cluster": pa.array([3, 3], pa.int64())}), p)
    assert _fields(load_questions([p])) == [("x", "q?", None, (), "3"), ("y", "r?", None, (), "3")]


cell = st.text(st.one_of(st.sampled_from([",", '"', "\n", "\r", "\u2028", "\u2029", "\x85", ";", "|", " "]),
                         st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")), max_size=30)


@SETTINGS
@given(rows=st.lists(st.tuples(cell.filter(str.strip), cell), min_size=1, max_size=8),
       style=st.sampled_from([("\r\n", csv.QUOTE_MINIMAL), ("\n", csv.QUOTE_ALL)]))
def test_any_text_in_a_csv_cell_round_trips_at_its_row_line(tmp_path, rows, style):
    """The csv module's writer quotes what it must; each question and reference is read back as written, and each
    row's line is 1 + the line feeds written before it. (With "\n" ending rows, the writer leaves a cell holding a
    bare carriage return unquoted, which no reader can tell from a line end: that style quotes every cell.)"""
    buf = io.StringIO(newline="")
    w = csv.writer(buf, lineterminator=style[0], quoting=style[1])
    w.writerow(["qid", "prompt", "answer"])
    starts = []
    for i, (question, reference) in enumerate(rows):
        starts.append(buf.getvalue().count("\n") + 1)
        w.writerow([f"q{i}", question, reference])
    p = tmp_path / "gen.csv"
    p.write_bytes(buf.getvalue().encode("utf-8"))
    got = load_questions([p], {p: SetFormat((("id", "qid"), ("question", "prompt"), ("reference", "answer")))})
    want = [(q, r or None, s) for (q, r), s in zip(rows, starts, strict=True)]
    assert [(q.question, q.reference, q.line) for q in got] == want


@pytest.mark.parametrize("text, line, column, words", [
    ("qid,prompt\na,x\na,\"y\nz\"\n", 3, "qid", "duplicate question id 'a'"),
    ("qid,prompt\na,\"two\nlines\"\nb,  \n", 4, "prompt", "non-empty string"),
    ("qid,prompt,cluster\na,x,c\nb,y,\nc,z,d\n", None, None, None),  # an empty cluster cell is none: loads
    ("id,prompt\na,x\n", 1, "qid", "no column 'qid'"),
    ("qid,prompt,prompt\na,x,y\n", 1, "prompt", "2 times"),
])
def test_a_bad_csv_row_is_refused_naming_file_line_and_column(tmp_path, text, line, column, words):
    p = tmp_path / "bad.csv"
    p.write_text(text)
    if words is None:
        assert [q.cluster for q in load_questions([p], {p: ID_QUESTION})] == ["c", None, "d"]
        return
    with pytest.raises(BadInput) as e:
        load_questions([p], {p: ID_QUESTION})
    assert (e.value.file, e.value.line, e.value.field) == (str(p), line, column) and words in e.value.message


@pytest.mark.parametrize("text, line", [
    ("qid,prompt\na,x\nb,\"y\nz\",extra\n", 3),  # a row with more cells than the header
    ("qid,prompt\na,x\nb,\"y\"z\n", 3),  # text after a closing quote
    ("qid,prompt\na,x\rb,y\n", 2),  # a bare carriage return outside quotes
])
def test_a_row_the_csv_module_cannot_split_is_refused_at_its_line(tmp_path, text, line):
    p = tmp_path / "bad.csv"
    p.write_text(text, newline="")
    with pytest.raises(BadInput) as e:
        load_questions([p], {p: ID_QUESTION})
    assert (e.value.file, e.value.line) == (str(p), line)


def test_a_csv_set_that_is_not_utf8_is_refused_at_its_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_bytes("qid,prompt\na,caf\u00e9\n".encode("latin-1"))
    with pytest.raises(BadInput) as e:
        load_questions([p], {p: ID_QUESTION})
    assert e.value.line == 2 and "not UTF-8" in e.value.message


@pytest.mark.parametrize("columns, row, column", [
    ({"qid": ["a", None], "prompt": ["x", "y"]}, 1, "qid"),
    ({"qid": pa.array([1, 2], pa.int64()), "prompt": ["x", "y"]}, 0, "qid"),
    ({"qid": ["a", "b"], "prompt": ["x", "   "]}, 1, "prompt"),
    ({"qid": ["a", "b"], "prompt": ["x", "y"], "cluster": [True, False]}, 0, "cluster"),
    ({"qid": ["a", "b"], "prompt": ["x", "y"], "tags": pa.array([[2], [1]], pa.list_(pa.int64()))}, 0, "tags"),
    ({"qid": ["a", "b"], "prompt": ["x", "y"], "reference": pa.array([1.5, None])}, 0, "reference"),
    ({"qid": ["a", "b"], "prompt": ["x", "y\0"]}, 1, "prompt"),
])
def test_a_bad_parquet_row_is_refused_naming_file_row_and_column(tmp_path, columns, row, column):
    p = tmp_path / "bad.parquet"
    pq.write_table(pa.table(columns), p)
    with pytest.raises(BadInput) as e:
        load_questions([p], {p: ID_QUESTION})
    assert (e.value.file, e.value.field) == (str(p), column) and re.match(rf"row {row}\b", e.value.message)


def test_a_file_that_is_not_parquet_is_refused_naming_it(tmp_path):
    p = tmp_path / "bad.parquet"
    p.write_text("qid,prompt\na,x\n")
    with pytest.raises(BadInput) as e:
        load_questions([p])
    assert e.value.file == str(p) and "parquet" in e.value.message


def _registered(tmp_path, old: str, new: str):
    text = _example()
    assert old in text
    (tmp_path / "prereg.toml").write_text(text.replace(old, new, 1))
    return load_experiment(tmp_path)


def test_the_registered_mapping_reaches_the_reader(tmp_path):
    exp = _registered(tmp_path, 'tag_separator = ";"', 'tag_separator = "|"')
    (tmp_path / "sets").mkdir()
    p = tmp_path / "sets" / "more.csv"
    p.write_text("qid,prompt,answer,labels,topic\nk1,Why?,Because.,a| b,t\n")
    formats = exp.set_formats_by_path()
    assert _fields(load_questions([p.resolve()], formats)) == [("k1", "Why?", "Because.", ("a", "b"), "t")]


@pytest.mark.parametrize("old, new, field", [
    ('[sets."sets/more.csv"]', '[sets."sets/other.csv"]', "sets/other.csv"),  # names no registered set
    ('columns = { id = "qid"', 'columns = { idd = "qid"', "idd"),  # maps no field
    ('columns = { id = "qid"', 'columns = { id = ""', "id"),
    ('question = "prompt"', 'question = "qid"', "columns"),  # two fields, one column
    ('tag_separator = ";"', 'tag_separator = ""', "tag_separator"),
    ('tag_separator = ";"', 'tag_seperator = ";"', "tag_seperator"),
])
def test_a_bad_mapping_is_refused_at_registration_naming_its_key(tmp_path, old, new, field):
    with pytest.raises(BadInput) as e:
        _registered(tmp_path, old, new)
    assert e.value.field == field and e.value.file == str(tmp_path / "prereg.toml") and e.value.line is not None


def test_a_mapping_for_a_jsonl_set_is_refused(tmp_path):
    text = re.sub(r'\[sets\."sets/more.csv"\]', '[sets."sets/exam.jsonl"]', _example())
    (tmp_path / "prereg.toml").write_text(text)
    with pytest.raises(BadInput) as e:
        load_experiment(tmp_path)
    assert e.value.field == "sets/exam.jsonl" and "column mapping" in e.value.message
