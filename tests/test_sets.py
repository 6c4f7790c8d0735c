"""Question sets as a class of inputs: every question planted is a question loaded, whatever the file's line ends,
final newline, byte-order mark, blank lines and trailing whitespace; every bad byte or character is refused
naming the file, the line and (inside a value) the field.

A set file is sealed input, read by core.jsonl's COMPLETE rule; the raw files the harness appends to are read by
the TORN-TAIL rule, where a last line without its newline was cut by a kill. The two rules are tested side by
side on the same bytes.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import jsonl
from core.errors import BadInput
from registration.questions import load_questions

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), min_size=1, max_size=40)
question = text.filter(lambda s: s.strip())
endings = st.sampled_from(["\n", "\r\n"])
blank = st.sampled_from(["", " ", "\t", "  \t "])
trailing = st.sampled_from(["", " ", "\t", " \t"])


@st.composite
def set_file(draw) -> tuple[bytes, list[tuple[str, str, int]]]:
    """A set file's bytes and what it plants: (id, question, line) of every record, in order."""
    n = draw(st.integers(1, 12))
    lines: list[str] = []
    planted = []
    for i in range(n):
        for _ in range(draw(st.integers(0, 2))):
            lines.append(draw(blank))
        record = {"id": f"q{i}-{draw(text)}", "question": draw(question)}
        if draw(st.booleans()):
            record["reference"] = draw(text)
        lines.append(json.dumps(record, ensure_ascii=draw(st.booleans())) + draw(trailing))
        planted.append((record["id"], record["question"], len(lines)))
    for _ in range(draw(st.integers(0, 2))):
        lines.append(draw(blank))
    ends = [draw(endings) for _ in lines]
    body = "".join(line + end for line, end in zip(lines, ends, strict=True))
    if draw(st.booleans()):  # no final newline: the last line is still a line
        body = body[: -len(ends[-1])]
    bom = "\ufeff" if draw(st.booleans()) else ""
    return (bom + body).encode("utf-8"), planted


@SETTINGS
@given(set_file())
def test_every_planted_question_is_loaded_whatever_the_line_ends(tmp_path, case):
    data, planted = case
    p = tmp_path / "set.jsonl"
    p.write_bytes(data)
    got = [(q.id, q.question, q.line) for q in load_questions([p])]
    assert got == planted


def test_a_last_question_without_a_final_newline_is_a_question(tmp_path):
    p = tmp_path / "set.jsonl"
    records = [{"id": f"q{i:02}", "question": f"Question {i}?"} for i in range(40)]
    p.write_text("\n".join(json.dumps(r) for r in records), encoding="utf-8")  # 40 lines, no final newline
    assert [q.id for q in load_questions([p])] == [r["id"] for r in records]


def test_the_two_reading_rules_differ_only_in_the_last_line_without_newline(tmp_path):
    """The raw reader skips a last line without its newline (a record torn by a kill); the sealed reader keeps it."""
    p = tmp_path / "f.jsonl"
    p.write_bytes(b'{"id": "a", "question": "?"}\n{"id": "b", "question": "?"}')
    assert [r["id"] for _, r in jsonl.read(p)] == ["a"]
    assert [r["id"] for _, r in jsonl.read_sealed(p)] == ["a", "b"]
    p.write_bytes(b'{"id": "a", "question": "?"}\n{"id": "b", "question": "?"}\n')
    assert [r["id"] for _, r in jsonl.read(p)] == [r["id"] for _, r in jsonl.read_sealed(p)] == ["a", "b"]


# ---- what is refused, and where -----------------------------------------------------------------------------

CORRUPTIONS = {  # what is planted inside the question's value, as bytes of the file -> what the message says
    "invalid utf-8": (b"\xff", "not UTF-8"),
    "truncated utf-8": (b"\xe2\x82", "not UTF-8"),
    "overlong utf-8": (b"\xc0\xaf", "not UTF-8"),
    "encoded surrogate": (b"\xed\xa0\x80", "not UTF-8"),
    "bare CR": (b"\r", "carriage return"),
    "raw NUL": (b"\x00", "NUL"),
    "escaped NUL": (b"\\u0000", "NUL"),
    "lone surrogate escape": (b"\\ud800", "lone surrogate"),
    "lone low surrogate escape": (b"\\udc00x", "lone surrogate"),
}


@SETTINGS
@given(set_file(), st.data(), st.sampled_from(sorted(CORRUPTIONS)))
def test_a_bad_character_in_a_question_is_refused_at_its_line_and_field(tmp_path, case, data, corruption):
    raw, planted = case
    bad, says = CORRUPTIONS[corruption]
    lines = raw.split(b"\n")
    k = data.draw(st.integers(0, len(planted) - 1))
    _, _, line = planted[k]
    marker = b'"question": "'
    at = lines[line - 1].index(marker) + len(marker)
    lines[line - 1] = lines[line - 1][:at] + bad + lines[line - 1][at:]
    p = tmp_path / "set.jsonl"
    p.write_bytes(b"\n".join(lines))
    with pytest.raises(BadInput) as e:
        load_questions([p])
    assert e.value.file == str(p) and e.value.line == line and says in e.value.message, str(e.value)
    assert e.value.field == "question", str(e.value)


REFUSALS = [
    (b'{"id": "a", "question": "?"}\r{"id": "b", "question": "?"}\n', 1, None, "carriage return"),
    (b'{"id": "a", "question": "?"}\n\x00\n', 2, None, "NUL"),
    (b'{"id": "a", "question": "?"}\n{"id": "b"}', 2, "question", "missing"),
    (b'{"id": "a", "question": "?"}\n[1, 2]\n', 2, None, "JSON object"),
    (b'{"id": "a", "question": "?"}\n{"id": "b", "question": "?"', 2, None, "not valid JSON"),
    (b'\xef\xbb\xbf\xef\xbb\xbf{"id": "a", "question": "?"}\n', 1, None, "not valid JSON"),
    (b'{"id": "a", "question": "?"}\n' + b"[" * 5000 + b"]" * 5000 + b"\n", 2, None, "not valid JSON"),
    (b'{"id": "a", "question": "\xff?"}\n', 1, "question", "not UTF-8"),
    (b'{"id": "a\xff", "question": "?"}\n', 1, "id", "not UTF-8"),
    (b'{"id": "a", "question": "?", "tags": ["\\ud83d"]}\n', 1, "tags[0]", "lone surrogate"),
    (b'{"id": "a", "question": " \\t "}\n', 1, "question", "non-empty"),
    (b" \n\t\n", None, None, "no questions"),
]


@pytest.mark.parametrize("data, line, field, says", REFUSALS, ids=[f"{i}-{r[3]}" for i, r in enumerate(REFUSALS)])
def test_each_refusal_names_file_line_and_field(tmp_path, data, line, field, says):
    p = tmp_path / "set.jsonl"
    p.write_bytes(data)
    with pytest.raises(BadInput) as e:
        load_questions([p])
    assert (e.value.file, e.value.line, e.value.field) == (str(p), line, field), str(e.value)
    assert says in e.value.message, str(e.value)
