"""`python -m judge export`: one tidy table of a real run, from which README's pandas snippet recomputes a
headline comparison without our code."""
from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from conftest import ROOT, cli

# README states this tolerance for the bootstrap bounds: the snippet draws its own resamples (question
# indices), numbers.json draws counts per distinct difference, so the two agree within Monte-Carlo error.
CI_TOLERANCE = 0.02


def readme_snippet() -> str:
    """The python block under README's "Recomputing a decision without our code"."""
    text = (ROOT / "README.md").read_text()
    section = text.split("### Recomputing a decision without our code", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.slow
def test_the_readme_snippet_recomputes_the_headline_comparison(small_run, tmp_path, monkeypatch):
    snippet = readme_snippet()
    assert len(snippet.strip().splitlines()) <= 15
    r = cli("judge", "export", str(small_run), "--format", "parquet", "--out", str(tmp_path / "export.parquet"))
    assert r.returncode == 0, r.stderr
    monkeypatch.chdir(tmp_path)
    ns: dict = {}
    exec(compile(snippet, "README.md", "exec"), ns)
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
                               "score", "raw_sha256"]
    # 4 arms x 2 quants x 3 questions, one judge: one row each (planted by the run's size)
    assert len(p) == len(c) == 24
    assert set(p.arm) == {"base", "trained", "glue-base", "glue-trained"} and set(p.quant) == {"Q8_0", "Q4_K_M"}
    assert list(p.question.unique()) == ["q01", "q02", "q03"] and set(p.cluster) == {"d01"}
    assert (p.judge == "local").all()
    assert np.array_equal(p.score.fillna(-1).to_numpy(dtype=float), c.score.fillna(-1).to_numpy(dtype=float))
    assert (p.answer == c.answer).all() and (p.label == c.label).all()
    # each row's raw-reply digest is the sha256 of the judge's last raw reply for that label
    import hashlib

    judgments = {j["label"]: j for j in map(json.loads, (small_run / "judgments.jsonl").read_text().splitlines())}
    for row in p.itertuples():
        j = judgments[row.label]
        assert row.status == j["status"]
        assert row.raw_sha256 == hashlib.sha256(j["attempts"][-1]["raw"].encode()).hexdigest()
        assert (pd.isna(row.score) and j["score"] is None) or row.score == j["score"]


@pytest.mark.integration
def test_export_of_a_folder_that_is_not_a_run_is_bad_input(tmp_path):
    (tmp_path / "answers.jsonl").write_text("")
    r = cli("judge", "export", str(tmp_path), "--format", "csv")
    assert r.returncode == 2
    assert f"{tmp_path / 'run.json'}: missing" in r.stderr
    assert "Traceback" not in r.stderr
