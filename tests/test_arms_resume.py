"""SIGKILL a real collection several times mid-run, then finish it: nothing lost, nothing twice, no call repaid.

Once decoding one sequence at a time and once with `[runtime] parallel_sequences = 4`, where four calls are in flight in
one llama.cpp context when the kill comes: the rows written are still a prefix of the task order."""
from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from core import jsonl
from registration.seal import seal

from conftest import ROOT

DEMO = ROOT / "sealed" / "demo"

pytestmark = pytest.mark.integration

LIMIT = 5  # base arm x 2 quants x 5 questions = 10 rows


def _rows(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def _puts(cache: Path) -> dict[str, int]:
    with sqlite3.connect(cache / "calls.sqlite") as db:
        return dict(db.execute("SELECT key, puts FROM calls"))


def registered(tmp_path: Path, batch: int) -> Path:
    exp = tmp_path / f"exp-{batch}"
    shutil.copytree(DEMO, exp)
    toml = (exp / "prereg.toml").read_text()
    (exp / "prereg.toml").write_text(toml.replace("n_ctx = 2048\n", f"n_ctx = 2048\nparallel_sequences = {batch}\n", 1))
    seal(exp)
    return exp


@pytest.mark.parametrize("batch", [1, 4])
def test_sigkill_mid_collection_then_resume(tmp_path, empty_call_cache, batch):
    cache, out = empty_call_cache, tmp_path / "run"
    env = {**os.environ, "BLINDEVAL_CACHE": str(cache)}
    args = [sys.executable, "-m", "arms", "collect", "--exp", str(registered(tmp_path, batch)), "--arms", "base",
            "--limit", str(LIMIT), "--out", str(out), "--quiet"]
    answers = out / "answers.jsonl"
    kills = 0
    # after the target row, into the next generation; at batch 4 the rows come four at a time, so the last kill goes
    # in as soon as its row is written, or the two rows left can be done before it
    for target, extra_s in ((1, 0.1), (4, 0.35), (7, 0.6 if batch == 1 else 0.0)):
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while _rows(answers) < target and proc.poll() is None and time.time() < deadline:
            time.sleep(0.02)
        time.sleep(extra_s)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        if target == 4:  # what a kill inside write() leaves: a torn last line
            with open(answers, "ab") as f:
                f.write(b'{"arm":"base","row":"torn-by-a-kil')
    assert kills == 3, "the collection finished before it could be killed three times"
    before = [r["row"] for _, r in jsonl.read(answers)]
    keys_before = set(_puts(cache))
    assert 0 < len(before) < 2 * LIMIT

    r = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    data = answers.read_bytes()
    assert data.endswith(b"\n") and b"torn-by-a-kil" not in data  # no partial record survives
    rows = [rec for _, rec in jsonl.read(answers)]
    ids = [rec["row"] for rec in rows]
    assert len(ids) == len(set(ids)) == 2 * LIMIT  # every row, once
    assert ids[: len(before)] == before  # earlier rows untouched
    assert all(rec["status"] == "ok" for rec in rows)
    last = json.loads((out / "collection.json").read_text())["last_invocation"]["answers"]
    puts = _puts(cache)
    assert set(puts.values()) == {1}  # no finished call was ever paid for twice, across all five processes
    assert last["rows_already_done"] == len(before)
    assert last["model_calls"] == len(set(puts) - keys_before)  # the final run called only what was never finished
    assert last["model_calls"] + last["cached_calls"] == 2 * LIMIT - len(before)
