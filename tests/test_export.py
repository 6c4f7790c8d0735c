"""`python -m judge export`: one tidy table of a real run, from which the export guide's pandas snippet recomputes a
headline comparison without our code."""
from __future__ import annotations

import csv
import json
import os
import re

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import BadInput

from conftest import ROOT, cli

# docs/how-to/export.md states this tolerance for the bootstrap bounds: the snippet draws its own resamples (question
# indices), numbers.json draws counts per distinct difference, so the two agree within Monte-Carlo error.
CI_TOLERANCE = 0.02


def guide_snippet() -> str:
    """The python block of docs/how-to/export.md ("Export a run and recompute a decision without our code")."""
    text = (ROOT / "docs" / "how-to" / "export.md").read_text()
    section = text.split("# Export a run and recompute a decision without our code", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_the_export_guide_snippet_recomputes_the_headline_comparison(small_run, tmp_path, monkeypatch):
    snippet = guide_snippet()
    assert len(snippet.strip().splitlines()) <= 15
    r = cli("judge", "export", str(small_run), "--format", "parquet", "--out", str(tmp_path / "export.parquet"))
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(snippet, "docs/how-to/export.md", "exec"), ns)
    numbers = json.loads((small_run / "numbers.json").read_text())
    c = next(c for c in numbers["comparisons"] if c["id"] == "H1-Q8_0")
    assert c["result"] is not None, "the small run must score H1-Q8_0 for the snippet to have something to match"
    assert (ns["a"], ns["b"], ns["quant"], ns["judge"]) == (c["a"], c["b"], c["quant"], numbers["judge"])
    assert ns["diff"] == c["result"]["diff"]
    assert len(ns["d"]) == c["result"]["n"]
    assert ns["lo"] == pytest.approx(c["result"]["ci_low"], abs=CI_TOLERANCE)
    assert ns["hi"] == pytest.approx(c["result"]["ci_high"], abs=CI_TOLERANCE)


@pytest.mark.slow
def test_csv_and_parquet_hold_the_same_tidy_table(small_run, tmp_path):
    for fmt in ("csv", "parquet"):
        r = cli("judge", "export", str(small_run), "--format", fmt, "--out", str(tmp_path / f"t.{fmt}"))
        assert r.returncode == 0, r.stderr
    p = pd.read_parquet(tmp_path / "t.parquet")
    c = pd.read_csv(tmp_path / "t.csv")
    assert list(p.columns) == ["question", "cluster", "arm", "quant", "sample", "answer", "judge", "label", "status",
                               "score", "raw_sha256", "gold", "gold_scores", "gold_design"]
    # 4 arms x 2 quants x 3 questions, one judge: one row each (planted by the run's size)
    assert len(p) == len(c) == 24
    assert set(p.arm) == {"base", "trained", "glue-base", "glue-trained"} and set(p.quant) == {"Q8_0", "Q4_K_M"}
    assert list(p.question.unique()) == ["q01", "q02", "q03"] and set(p.cluster) == {"d01"}
    assert (p.judge == "local").all()
    assert np.array_equal(p.score.fillna(-1).to_numpy(dtype=float), c.score.fillna(-1).to_numpy(dtype=float))
    # the CSV's text cells as the export guide says to read them back: one leading ' dropped where there is one
    assert (p.answer == c.answer.map(_unquote)).all() and (p.label == c.label).all()
    # each row's raw-reply digest is the sha256 of the judge's last raw reply for that label
    import hashlib

    judgments = {j["label"]: j for j in map(json.loads, (small_run / "judgments.jsonl").read_text().splitlines())}
    for row in p.itertuples():
        j = judgments[row.label]
        assert row.status == j["status"]
        assert row.raw_sha256 == hashlib.sha256(j["attempts"][-1]["raw"].encode()).hexdigest()
        assert (pd.isna(row.score) and j["score"] is None) or row.score == j["score"]


@pytest.mark.slow
def test_a_gold_program_that_exits_under_export_never_stops_the_export(small_run, tmp_path):
    """Before, a gold program that exited when export called it ended export: exit 0, nothing written."""
    import shutil

    from registration.seal import seal

    exp = tmp_path / "exp"
    shutil.copytree(json.loads((small_run / "run.json").read_text())["experiment_dir"], exp)
    (exp / "gold.py").write_text((exp / "gold.py").read_text() + "\n\ndef score(question, reference, answer):\n"
                                 "    raise SystemExit(0)\n")
    seal(exp)
    r = cli("judge", "export", str(small_run), "--exp", str(exp), "--out", str(tmp_path / "t.csv"))
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr
    c = pd.read_csv(tmp_path / "t.csv")
    assert len(c) == 24 and c.gold.isna().all() and (c.gold_scores == 0).all()  # every gold score is an error


@pytest.mark.integration
def test_export_of_a_folder_that_is_not_a_run_is_bad_input(tmp_path):
    (tmp_path / "answers.jsonl").write_text("")
    r = cli("judge", "export", str(tmp_path), "--format", "csv", "--out", str(tmp_path.parent / "t.csv"))
    assert r.returncode == 2
    assert f"{tmp_path / 'run.json'}: missing" in r.stderr
    assert "Traceback" not in r.stderr
    r = cli("judge", "export", str(tmp_path), "--format", "csv", "--out", str(tmp_path / "answers.jsonl"))
    assert r.returncode == 2 and "inside the results folder" in r.stderr and "Traceback" not in r.stderr
    assert (tmp_path / "answers.jsonl").read_text() == ""


# --- what the CSV holds, whatever an answer contains ----------------------------------------------------------

FORMULA_LEADS = "=+-@\t\r"  # OWASP's CSV-injection characters
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)  # any Unicode a JSON string can carry
# text that starts with each formula character, a quote, or holds every kind of line break and quoting
LEADING = st.one_of(TEXT, st.tuples(st.sampled_from([*FORMULA_LEADS, "'", '"', ",", "\n", "\r\n"]), TEXT).map("".join),
                    st.lists(st.sampled_from(["\r", "\n", "\r\n", '"', ",", "'", "=1+1", "\u2028", "\x85", "\x0b",
                                              "\x0c", "\x1c", "\x1d", "\x1e", "\u2029", "a", " "]),
                             max_size=8).map("".join))


def _tables():
    rows = st.lists(st.tuples(LEADING, LEADING, st.integers(-3, 3), st.one_of(st.none(), st.integers(-2, 2))),
                    min_size=1, max_size=5)
    return rows.map(lambda rs: pd.DataFrame(
        {"question": [r[0] for r in rs], "answer": [r[1] for r in rs], "sample": [r[2] for r in rs],
         "score": pd.array([r[3] for r in rs], dtype="Int64")}))


def _unquote(v):
    """The export guide's rule to get a text cell back: drop one leading ' where there is one."""
    return v[1:] if isinstance(v, str) and v.startswith("'") else v


@pytest.mark.unit
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(df=_tables())
def test_every_text_survives_a_csv_round_trip_and_no_cell_is_a_formula(df, tmp_path, monkeypatch):
    """Through `export` as the command calls it (the table is planted): Python's csv module and pandas read back
    one row per answer, every text exactly after the export guide's rule, numbers as numbers, and no text cell a
    spreadsheet would run as a formula."""
    from judge.outputs import export as export_module

    run = tmp_path / "run"
    run.mkdir(exist_ok=True)
    monkeypatch.setattr(export_module, "table", lambda run_dir, exp_dir=None: df)
    out = export_module.export(run, "csv", tmp_path / "t.csv")
    with open(out, newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["question", "answer", "sample", "score"] and len(rows) == len(df) + 1
    for row, (_, want) in zip(rows[1:], df.iterrows(), strict=True):
        assert [_unquote(row[0]), _unquote(row[1])] == [want.question, want.answer]
        assert not row[0].startswith(tuple(FORMULA_LEADS)) and not row[1].startswith(tuple(FORMULA_LEADS))
        assert int(row[2]) == want["sample"] and row[3] == ("" if pd.isna(want.score) else str(want.score))
    back = pd.read_csv(out, dtype={"question": str, "answer": str}, keep_default_na=False)
    assert len(back) == len(df)
    assert [_unquote(v) for v in back.question] == list(df.question)
    assert [_unquote(v) for v in back.answer] == list(df.answer)
    assert back["sample"].tolist() == df["sample"].tolist()  # -1 stays the number -1, not the text '-1
    assert [None if v == "" else int(v) for v in back.score] == [None if pd.isna(v) else v for v in df.score]


@pytest.mark.unit
def test_an_export_is_never_written_inside_the_results_folder(tmp_path):
    from judge.outputs.export import default_out, export

    run = tmp_path / "results" / "demo"
    run.mkdir(parents=True)
    raw = run / "answers.jsonl"
    raw.write_text('{"planted": "raw evidence"}\n')
    (tmp_path / "link-to-run").symlink_to(run)
    (tmp_path / "link-to-raw").symlink_to(raw)
    for out in (raw, run / "export.csv", run / "sub" / "x.csv", run, tmp_path / "link-to-run" / "answers.jsonl",
                tmp_path / "link-to-raw", run / ".." / "demo" / "answers.jsonl"):
        with pytest.raises(BadInput) as e:
            export(run, "csv", out)
        assert e.value.field == "--out" and "inside the results folder" in str(e.value) and str(run) in str(e.value)
    assert raw.read_text() == '{"planted": "raw evidence"}\n'
    assert default_out(run, "csv") == tmp_path / "results" / "demo.export.csv"  # beside it, not in it
    assert default_out(tmp_path / "link-to-run", "parquet") == tmp_path / "results" / "demo.export.parquet"


@pytest.mark.unit
def test_an_export_through_a_hard_link_replaces_the_link_not_the_raw_file(tmp_path, monkeypatch):
    """A path outside the folder that is a hard link to a raw file inside it: the export replaces the link."""
    from judge.outputs import export as export_module

    run = tmp_path / "run"
    run.mkdir()
    raw = run / "answers.jsonl"
    raw.write_text('{"planted": "raw evidence"}\n')
    out = tmp_path / "t.csv"
    os.link(raw, out)
    monkeypatch.setattr(export_module, "table", lambda run_dir, exp_dir=None: pd.DataFrame({"answer": ["x"]}))
    for fmt in ("csv", "parquet"):
        export_module.export(run, fmt, out)
        assert raw.read_text() == '{"planted": "raw evidence"}\n'
    assert pd.read_parquet(out).answer.tolist() == ["x"]
