"""`judge repair`: a raw file two writers appended to at once keeps one valid history per key, logged, not by hand.

The unit tests generate what two writers of this code really leave: each reads the file once when it
starts (the second possibly after the first has appended some records), asks every key whose current
record is missing or an error, and appends its records, the two streams interleaved in any order. The
repaired file must obey the retry rule (checked here by the test's own reading, and by the main path's
reader), keep the first finished record of every key unchanged, lose nothing (kept and moved records
together are the original ones), and be left alone by a second repair. The integration test does it end
to end on a real run: duplicates appended, the runs' reader refuses, `judge repair`, then run and verify
pass.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arms.folder import REPAIRABLE
from core import jsonl
from core.errors import BadInput
from core.records import ANSWER_KEY

from conftest import cli

KEYS = ("a", "b", "c", "d")
STATUS = st.sampled_from(("ok", "ok", "error"))


def current_of(records: list[dict]) -> dict[str, tuple[int, dict]]:
    """Each key's current record as a writer reads it at its start (the file is valid when it does)."""
    out = {}
    for no, rec in enumerate(records, start=1):
        out[rec["row"]] = (no, rec)
    return out


def plan(snapshot: list[dict], writer: str, statuses: list[str]) -> list[dict]:
    """What a writer appends: one record per key missing or in error when it read the file."""
    now = current_of(snapshot)
    todo = [k for k in KEYS if k not in now or now[k][1]["status"] == "error"]
    out = []
    for i, k in enumerate(todo):
        rec = {"row": k, "status": statuses[i % len(statuses)], "by": writer, "n": i}
        if k in now:
            rec["retry_of"] = now[k][0]
        out.append(rec)
    return out


@st.composite
def two_writers(draw):
    """(file records, index where the concurrent part starts) as a sequential history then two writers left it."""
    records: list[dict] = []
    for run in range(draw(st.integers(0, 2))):  # earlier runs, one at a time: a valid file
        records += plan(records, f"run{run}", draw(st.lists(STATUS, min_size=1, max_size=4)))
    start = len(records)
    first = plan(records, "W1", draw(st.lists(STATUS, min_size=1, max_size=4)))
    after = draw(st.integers(0, len(first)))  # the second writer reads the file after the first appended this many
    second = plan(records + first[:after], "W2", draw(st.lists(STATUS, min_size=1, max_size=4)))
    order = draw(st.permutations([1] * (len(first) - after) + [2] * len(second)))
    merged, i, j = records + first[:after], after, 0
    for w in order:
        if w == 1:
            merged.append(first[i])
            i += 1
        else:
            merged.append(second[j])
            j += 1
    return merged, start


def write(path: Path, records: list[dict]) -> None:
    path.write_text("".join(jsonl.dumps(r) + "\n" for r in records))


def rule_holds(records: list[dict]) -> bool:
    """The retry rule read by hand: every record after a key's first replaces an error at the line it names."""
    last: dict[str, tuple[int, dict]] = {}
    for no, rec in enumerate(records, start=1):
        k = rec["row"]
        if k in last:
            line, prev = last[k]
            if prev["status"] == "error" and rec.get("retry_of") == line:
                last[k] = (no, rec)
                continue
            return False
        if "retry_of" in rec:
            return False
        last[k] = (no, rec)
    return True


def plain(rec: dict) -> dict:
    return {k: v for k, v in rec.items() if k != "retry_of"}


@pytest.mark.unit
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(two_writers())
def test_what_two_writers_leave_is_repaired_to_one_history_per_key(tmp_path, case):
    records, _ = case
    path = tmp_path / "answers.jsonl"
    write(path, records)
    fixed, moved = jsonl.deduplicated(path, ("row",))
    kept = [json.loads(line) for line in fixed.decode().splitlines()]
    assert rule_holds(kept)
    path.write_bytes(fixed)
    jsonl.current(path, ("row",))  # the main path reads it
    for k in KEYS:
        finished = [r for r in records if r["row"] == k and r["status"] != "error"]
        mine = [r for r in kept if r["row"] == k]
        if finished:  # the first finished record is the one kept: no answer or verdict already given changes
            assert plain(mine[-1]) == plain(finished[0])
        elif any(r["row"] == k for r in records):
            assert mine and mine[-1]["status"] == "error"  # asked again by the next run
    # nothing lost: each moved record is the original on its line, and kept + moved are the original records
    assert all(records[m.line - 1] == m.record and m.reason for m in moved)
    assert sorted(map(jsonl.dumps, map(plain, kept + [m.record for m in moved]))) == \
        sorted(map(jsonl.dumps, map(plain, records)))
    assert jsonl.deduplicated(path, ("row",)) == (fixed, [])  # a second repair changes nothing


@pytest.mark.unit
@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(two_writers())
def test_a_file_one_writer_wrote_is_left_byte_for_byte(tmp_path, case):
    records, start = case
    path = tmp_path / "answers.jsonl"
    write(path, records[:start])
    assert jsonl.deduplicated(path, ("row",)) == (path.read_bytes(), [])


@pytest.mark.unit
@pytest.mark.parametrize("retry_of", [2, 5, 9, "1"])
def test_a_retry_pointing_anywhere_but_an_earlier_error_of_its_key_is_refused_not_guessed(tmp_path, retry_of):
    """Concurrent writers never leave this (each retries an error it read): the file was edited."""
    records = [{"row": "a", "status": "error"}, {"row": "a", "status": "ok", "retry_of": 1},
               {"row": "b", "status": "ok"}, {"row": "a", "status": "ok", "retry_of": 1},
               {"row": "c", "status": "error", "retry_of": retry_of}]
    path = tmp_path / "answers.jsonl"
    write(path, records)
    with pytest.raises(BadInput) as e:
        jsonl.deduplicated(path, ("row",))
    assert (e.value.line, e.value.field) == (5, "retry_of")


# --- end to end ---------------------------------------------------------------------------------------------------

@pytest.mark.integration
def test_a_folder_with_duplicate_finished_records_is_repaired_by_the_command(tmp_path):
    from test_folder import SERVED, Script, experiment, lines, run

    from support.scripted_server import ScriptedServer

    with ScriptedServer(Script(), models=SERVED) as server:
        exp = experiment(tmp_path, server.openai_url)
        out = tmp_path / "out"
        assert run(exp, out, "--arms", "--limit", "3").returncode == 0
        clean = {name: (out / name).read_bytes() for name in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl")}
        # what a second writer leaves: copies of finished records, appended after the first writer's
        answers, keys, verdicts = (lines(out / n) for n in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl"))
        second_answer = {**answers[1], "text": "a second writer's answer"}
        second_verdict = {**verdicts[0], "score": (verdicts[0]["score"] + 1) % 3}
        with jsonl.Appender(out / "answers.jsonl") as w:
            w.write(second_answer)
        with jsonl.Appender(out / "blinding.jsonl") as w:
            w.write(keys[2])
        with jsonl.Appender(out / "judgments.jsonl") as w:
            w.write(second_verdict)
        with pytest.raises(BadInput) as refused:  # what every later run says (the reader all of them use)
            jsonl.current(out / "answers.jsonl", ANSWER_KEY)
        assert refused.value.line == len(answers) + 1 and "judge repair" in refused.value.message

        r = cli("judge", "repair", str(out))
        assert r.returncode == 0, r.stderr
        assert "answers.jsonl: 1 record(s) moved" in r.stdout and "judgments.jsonl: 1 record(s) moved" in r.stdout
        # each key keeps its first finished record: the files are again what the run wrote
        assert {n: (out / n).read_bytes() for n in clean} == clean
        log = lines(out / "repaired.jsonl")
        moved = {(m["file"], m["line"]): m for m in log if m["type"] == "moved"}
        assert set(moved) == {("answers.jsonl", len(answers) + 1), ("blinding.jsonl", len(keys) + 1),
                              ("judgments.jsonl", len(verdicts) + 1)}
        assert moved["answers.jsonl", len(answers) + 1]["record"] == second_answer
        assert moved["judgments.jsonl", len(verdicts) + 1]["record"] == second_verdict
        assert "a second finished record" in moved["answers.jsonl", len(answers) + 1]["reason"]
        assert "identical to the first, kept at line 3" in moved["blinding.jsonl", len(keys) + 1]["reason"]
        repairs = [m for m in log if m["type"] == "repair"]
        assert [m["file"] for m in repairs] == ["answers.jsonl", "blinding.jsonl", "judgments.jsonl"]

        calls = server.count
        r = run(exp, out, "--arms", "--limit", "3")
        assert r.returncode == 0, r.stderr
        assert server.count == calls  # resumed: nothing left to ask
        v = cli("judge", "verify", str(out))
        assert v.returncode == 0, v.stderr
        assert all(jsonl.deduplicated(out / n, k, retried)[1] == [] for n, k, retried in REPAIRABLE)


@pytest.mark.unit
def test_repair_is_refused_at_once_while_a_writer_holds_the_folder(tmp_path):
    """The lock: a repair while a run writes is refused, naming the run, and leaves the file alone."""
    from arms.folder import locked

    out = tmp_path / "out"
    out.mkdir()
    write(out / "answers.jsonl", [{"row": "a", "status": "ok"}, {"row": "a", "status": "ok"}])
    before = (out / "answers.jsonl").read_bytes()
    with locked(out, "judge run"):
        r = cli("judge", "repair", str(out), timeout=60)
    assert r.returncode == 2 and "another `judge run` is writing this results folder" in r.stderr, r.stderr
    assert (out / "answers.jsonl").read_bytes() == before and not (out / "repaired.jsonl").exists()
