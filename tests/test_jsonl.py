"""Raw files survive a kill: a partial last line is skipped on read and cut before the next append."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core import jsonl
from core.errors import BadInput

pytestmark = pytest.mark.unit


def test_partial_last_line_is_dropped_and_repaired(tmp_path):
    p = tmp_path / "a.jsonl"
    with jsonl.Appender(p) as w:
        w.write({"n": 1})
        w.write({"n": 2})
    with open(p, "a") as f:
        f.write('{"n": 3, "text": "half a rec')  # a kill mid-write
    assert [r["n"] for _, r in jsonl.read(p)] == [1, 2]
    with jsonl.Appender(p) as w:
        w.write({"n": 4})
    assert [r["n"] for _, r in jsonl.read(p)] == [1, 2, 4]


def test_bad_line_names_file_line_and_field(tmp_path):
    p = tmp_path / "b.jsonl"
    p.write_text('{"id": "q1"}\nnot json\n')
    with pytest.raises(BadInput) as e:
        list(jsonl.read(p))
    assert "b.jsonl:2" in str(e.value)
    p.write_text('{"id": "q1"}\n{"other": 1}\n')
    with pytest.raises(BadInput) as e:
        list(jsonl.read(p, required=("id",)))
    assert "b.jsonl:2" in str(e.value) and "'id'" in str(e.value)


# A provider's results file: JSON Lines, written in UTF-8 as it is (a JSON string may hold U+2028, U+2029 and U+0085
# raw, which `str.splitlines` splits at; the control characters among them a JSON writer escapes).
BREAKS = ["\u2028", "\u2029", "\x85", "\r", "\n", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e"]
TEXTS = st.lists(st.one_of(st.sampled_from(BREAKS), st.text(max_size=5)), min_size=1, max_size=6).map("".join)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(TEXTS, min_size=1, max_size=4))
def test_a_results_file_is_read_as_json_lines_whatever_its_texts_hold(texts):
    data = "".join(json.dumps({"custom_id": f"k{i}", "text": t}, ensure_ascii=False) + "\n"
                   for i, t in enumerate(texts)).encode()
    assert jsonl.json_lines(data) == [{"custom_id": f"k{i}", "text": t} for i, t in enumerate(texts)]
