"""Raw files survive a kill: a partial last line is skipped on read and cut before the next append."""
from __future__ import annotations

import pytest

from arms import jsonl
from arms.errors import BadInput

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
