"""SIGKILL `judge run` at 20 random points of collection, judging and report writing, then finish it.

After the final run the raw files hold every record once (a second record of a key only as the retry of
an error record, which a kill never makes), no partial record, no finished model call was paid for twice
(the call cache counts every store), and `judge verify` passes.
"""
from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from core import jsonl
from judge.verify.second_path.raw_files import by_hand

from conftest import ROOT

pytestmark = pytest.mark.slow

KILLS = 20


@pytest.mark.slow
def test_twenty_kills_lose_nothing_and_repeat_no_call(tmp_path, empty_call_cache):
    cache, out = empty_call_cache, tmp_path / "run"
    env = {**os.environ, "BLINDEVAL_CACHE": str(cache)}
    args = [sys.executable, "-m", "judge", "run", "--arms", "base,trained", "--limit", "3", "--out", str(out),
            "--quiet"]
    rng = random.Random(7)
    # kill points spread over the stages, each run resuming the last: (file to watch, lines to wait for)
    plan = ([("answers.jsonl", n) for n in (0, 1, 3, 5, 7, 9, 11)]
            + [("judgments.jsonl", n) for n in (0, 2, 4, 6, 8, 10, 11)]
            + [("judgments.jsonl", 12)] * 6)
    assert len(plan) == KILLS
    kills = 0
    for name, target in plan:
        proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 180
        while _lines(out / name) < target and proc.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 1.5 if target == 12 else 0.4))  # into the next call, or into report writing
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait()
        for f in ("answers.jsonl", "judgments.jsonl", "blinding.jsonl"):
            list(jsonl.read(out / f))  # never corrupt, at any instant (a torn tail is skipped)
    assert kills >= KILLS - 3, f"only {kills} runs were still running when their kill point came"

    r = subprocess.run(args, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    for name, key in (("answers.jsonl", ("row",)), ("judgments.jsonl", ("judge", "label"))):
        final = by_hand(out / name, key)  # no duplicate except error records superseded by a retry
        assert final.problems == [] and len(final.last) == 12, final.problems
    for name in ("answers.jsonl", "judgments.jsonl", "blinding.jsonl"):
        assert (out / name).read_bytes().endswith(b"\n")
    with sqlite3.connect(cache / "calls.sqlite") as db:
        puts = dict(db.execute("SELECT key, puts FROM calls"))
    assert puts and set(puts.values()) == {1}, "a finished model call was paid for twice"
    assert subprocess.run([sys.executable, "-m", "judge", "verify", str(out)], cwd=ROOT, env=env).returncode == 0


def _lines(path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0
