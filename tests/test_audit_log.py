"""Training logs as JSONL, CSV and parquet, with mapped columns; bad input names file, line and column."""
from __future__ import annotations

import importlib.util
import json

import pytest

from audit.log import load_columns, read_log
from core.errors import BadInput

from conftest import ROOT, cli

_spec = importlib.util.spec_from_file_location("ticket_log", ROOT / "tests" / "data" / "audit" / "ticket_log.py")
ticket = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ticket)
CSV_COLUMNS = ["step=global_step", "prompt_id=ticket", "completion_id=id", "prompt=query", "completion=text",
               "reward=total", "advantage=adv", "components=" + ",".join(f"rewards/{c}" for c in ticket.COMPONENTS)]


@pytest.mark.unit
def test_csv_with_multiline_completions_reads_like_the_jsonl(tmp_path):
    rows = ticket.rows()
    from_jsonl = read_log(ticket.write_jsonl(tmp_path / "t.jsonl", rows))
    from_csv = read_log(ticket.write_csv(tmp_path / "t.csv", rows), load_columns(None, CSV_COLUMNS))
    assert any("\n" in r.completion for r in from_csv.rows)  # raw newlines inside quoted cells survive
    strip = [(r.completion_id, r.completion, r.reward, r.advantage, {k.removeprefix("rewards/"): v
                                                                       for k, v in r.components.items()})
             for r in from_csv.rows]
    assert strip == [(r.completion_id, r.completion, r.reward, r.advantage, r.components) for r in from_jsonl.rows]


@pytest.mark.integration
def test_csv_errors_name_the_physical_line_and_column(tmp_path):
    rows = ticket.rows()
    bad = 170  # a row in the collapse window: earlier completions hold raw newlines, so line != row + 1
    rows[bad]["reward"] = "n/a"
    path = ticket.write_csv(tmp_path / "t.csv", rows)
    text = path.read_text()
    cid = rows[bad]["completion_id"]
    line = text[:text.index(f"\n{rows[bad]['step']},{rows[bad]['prompt_id']},{cid},")].count("\n") + 2
    assert line != bad + 2
    with pytest.raises(BadInput) as e:
        read_log(path, load_columns(None, CSV_COLUMNS))
    assert (e.value.line, e.value.field) == (line, "total") and "finite number" in e.value.message
    r = cli("audit", "rewards", str(path), *[a for c in CSV_COLUMNS for a in ("--column", c)], "--out",
            str(tmp_path / "o"))
    assert r.returncode == 2 and f"t.csv:{line}: field 'total':" in r.stderr


@pytest.mark.unit
def test_mapping_errors(tmp_path):
    toml = tmp_path / "cols.toml"
    toml.write_text('[columns]\nscore = "total"\n')
    with pytest.raises(BadInput) as e:
        load_columns(toml)
    assert e.value.field == "score" and "unknown field" in e.value.message
    path = ticket.write_csv(tmp_path / "t.csv", ticket.rows()[:8])
    with pytest.raises(BadInput) as e:
        read_log(path, load_columns(None, CSV_COLUMNS[:-1] + ["components=rewards/format,rewards/speed"]))
    assert e.value.field == "rewards/speed" and "missing" in e.value.message
    with pytest.raises(BadInput) as e:
        read_log(path, load_columns(None, CSV_COLUMNS[:-1] + ["components=scores/*"]))
    assert "no column matches" in e.value.message


@pytest.mark.unit
def test_jsonl_components_must_agree_and_ids_can_be_derived(tmp_path):
    p = tmp_path / "log.jsonl"
    base = {"step": 1, "prompt": "q", "completion": "a", "reward": 1.0}
    p.write_text("".join(json.dumps({**base, "components": {name: 1.0}}) + "\n" for name in "xy"))
    with pytest.raises(BadInput) as e:
        read_log(p, load_columns(None, ["prompt_id=", "completion_id="]))
    assert (e.value.line, e.value.field) == (2, "components")
    p.write_text(json.dumps(base) + "\n" + json.dumps({**base, "advantage": 1.5}) + "\n")
    log = read_log(p, load_columns(None, ["prompt_id=", "completion_id="]))
    assert [r.completion_id for r in log.rows] == ["line1", "line2"] and log.rows[0].prompt_id == log.rows[1].prompt_id
    assert [r.advantage for r in log.rows] == [None, 1.5] and log.component_names == ()


@pytest.mark.integration
def test_parquet_log(tmp_path):
    """Parquet logs (pyarrow is a dependency): the same rows as the JSONL they came from; a corrupt file is bad
    input."""
    rows = ticket.rows()[:16]
    path = tmp_path / "t.parquet"
    import pandas as pd

    pd.DataFrame(rows).to_parquet(path)
    got = [(r.completion, r.components) for r in read_log(path).rows]
    assert got == [(r["completion"], r["components"]) for r in rows]
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not really")
    r = cli("audit", "rewards", str(bad), "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "bad.parquet" in r.stderr and "Traceback" not in r.stderr
