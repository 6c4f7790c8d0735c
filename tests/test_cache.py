"""`python -m judge cache`: the call cache's size, entries by model, the results folders that used it, and pruning.

The folders are real folders, deleted as a user deletes them; the cache is a real sqlite file, written through
CallCache as runs write it.
"""
from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.__main__ import main
from models import cache as cache_module
from models.backends.base import Reply
from models.cache import CallCache, model_label, prune, summary

pytestmark = pytest.mark.unit

LLAMA = {"backend": "llama-cpp", "model_sha256": "ab" * 32, "lora_sha256": None}
TRAINED = {"backend": "llama-cpp", "model_sha256": "ab" * 32, "lora_sha256": ["cd" * 32]}
GPT = {"backend": "openai", "model": "gpt-4o-mini", "base_urls": []}


def reply(text: str) -> Reply:
    return Reply(text=text, finish_reason="stop", prompt_tokens=1, completion_tokens=1, latency_s=0.0)


def folder(root: Path, name: str, calls: list[str] = ()) -> Path:
    """A results folder whose answers.jsonl names `calls`, as a run leaves it."""
    d = root / name
    d.mkdir(parents=True, exist_ok=True)
    (d / "answers.jsonl").write_text("".join(json.dumps({"row": k, "status": "ok", "calls": [k]}) + "\n"
                                             for k in calls))
    return d


def keys(path: Path) -> set[str]:
    with sqlite3.connect(path) as db:
        return {k for (k,) in db.execute("SELECT key FROM calls")}


def test_model_labels_say_backend_model_and_adapters():
    assert model_label(GPT) == "openai gpt-4o-mini"
    assert model_label(LLAMA) == "llama-cpp abababababababab"
    assert model_label(TRAINED) == "llama-cpp abababababababab + LoRA cdcdcdcd"


def test_prune_removes_what_only_deleted_folders_used(tmp_path):
    path = tmp_path / "calls.sqlite"
    a, b, c = folder(tmp_path, "a"), folder(tmp_path, "b"), folder(tmp_path, "c", calls=["k4"])
    with_a = CallCache(path, run=a)
    with_a.put("k1", reply("one"), LLAMA)
    with_a.put("k2", reply("two"), LLAMA)
    with_a.put("k4", reply("four"), GPT)
    with_a.close()
    CallCache(path, run=c).close()  # c read k4 (its answers name it) and was killed before the read was recorded
    with_b = CallCache(path, run=b)
    assert with_b.get("k1").text == "one"  # b reads what a paid for: b used it too
    with_b.put("k3", reply("three"), TRAINED)
    with_b.close()
    outside = CallCache(path)  # a cache opened for no folder (a benchmark, a test): its entries are untracked
    outside.put("k5", reply("five"), GPT)
    outside.close()
    shutil.rmtree(a)
    cache = CallCache(path)
    try:
        deleted, _ = prune(cache, gone_runs=True)
        assert deleted == 1 and keys(path) == {"k1", "k3", "k4", "k5"}  # k2: only the deleted a used it
        s = summary(cache)
        assert {r: (there, n) for r, there, n in s.runs} == {str(b.resolve()): (True, 2), str(c.resolve()): (True, 1)}
        assert s.untracked == 1  # k5
        shutil.rmtree(b)
        deleted, _ = prune(cache, gone_runs=True)
        assert deleted == 2 and keys(path) == {"k4", "k5"}
        shutil.rmtree(c)
        deleted, _ = prune(cache, gone_runs=True)
        assert deleted == 1 and keys(path) == {"k5"} and summary(cache).runs == []
    finally:
        cache.close()


def test_prune_by_age_keeps_what_was_read_recently(tmp_path, monkeypatch):
    path = tmp_path / "calls.sqlite"
    now = [1_000_000.0]
    monkeypatch.setattr(cache_module, "time", type("Clock", (), {"time": staticmethod(lambda: now[0])}))
    run = folder(tmp_path, "r")
    cache = CallCache(path, run=run)
    cache.put("old", reply("o"), GPT)
    cache.put("read", reply("r"), GPT)
    now[0] += 10 * 86400
    assert cache.get("read") is not None  # read ten days later: used then
    cache.put("new", reply("n"), GPT)
    now[0] += 86400
    try:
        deleted, _ = prune(cache, older_than_days=5)
        assert deleted == 1 and keys(path) == {"read", "new"}
        deleted, _ = prune(cache, older_than_days=0.5)
        assert deleted == 2 and keys(path) == set()
    finally:
        cache.close()


def test_a_cache_written_before_it_recorded_models_and_folders_is_read_and_kept(tmp_path):
    path = tmp_path / "calls.sqlite"
    with sqlite3.connect(path) as db:  # the schema of earlier versions
        db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, reply TEXT NOT NULL, puts INTEGER NOT NULL DEFAULT 1)")
        db.execute("INSERT INTO calls (key, reply) VALUES (?, ?)", ("legacy", json.dumps(reply("x").to_dict())))
    cache = CallCache(path)
    try:
        assert cache.get("legacy").text == "x"
        s = summary(cache)
        assert s.entries == 1 and s.untracked == 1 and [m for m, _, _ in s.by_model] == ["(not recorded)"]
        assert prune(cache, gone_runs=True)[0] == 0 and keys(path) == {"legacy"}
    finally:
        cache.close()


@settings(max_examples=15, deadline=None)
@given(st.lists(st.tuples(st.sets(st.integers(0, 3), max_size=3), st.sets(st.integers(0, 3), max_size=2)),
                min_size=1, max_size=8),
       st.sets(st.integers(0, 3)))
def test_prune_keeps_exactly_the_entries_a_folder_on_disk_used_or_names(entries, deleted):
    """Entry i was stored or read by the folders in `used` and is named in the records of the folders in `named`;
    the folders in `deleted` are removed. An entry survives iff no folder recorded it, or one that recorded it or
    names it is still on disk."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        path = root / "calls.sqlite"
        names = {f: [f"k{i}" for i, (_, named) in enumerate(entries) if f in named] for f in range(4)}
        runs = {f: folder(root, f"run{f}", names[f]) for f in range(4)}
        for f in runs:  # every run opens the cache; the reads of the entries it names were lost (a kill)
            CallCache(path, run=runs[f]).close()
        for i, (used, _) in enumerate(entries):
            for f in sorted(used) or [None]:
                cache = CallCache(path, run=runs[f] if f is not None else None)
                if cache.get(f"k{i}") is None:
                    cache.put(f"k{i}", reply(str(i)), GPT)
                cache.close()
        for f in deleted:
            shutil.rmtree(runs[f])
        cache = CallCache(path)
        prune(cache, gone_runs=True)
        cache.close()
        kept = {f"k{i}" for i, (used, named) in enumerate(entries)
                if not used or (used - deleted) or (named - deleted)}
        assert keys(path) == kept


def test_the_cache_command_shows_and_prunes(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("BLINDEVAL_CACHE", str(tmp_path / "cache"))
    assert main(["cache"]) == 0
    assert "does not exist yet" in capsys.readouterr().out
    (tmp_path / "cache").mkdir(exist_ok=True)
    gone = folder(tmp_path, "gone")
    cache = CallCache(tmp_path / "cache" / "calls.sqlite", run=gone)
    cache.put("k1", reply("one"), GPT)
    cache.put("k2", reply("two"), TRAINED)
    cache.close()
    assert main(["cache"]) == 0
    out = capsys.readouterr().out
    assert "2 entries" in out and "openai gpt-4o-mini" in out and "+ LoRA cdcdcdcd" in out
    assert f"on disk         2 entries  {gone.resolve()}" in out
    shutil.rmtree(gone)
    assert main(["cache", "--prune-gone-runs"]) == 0
    out = capsys.readouterr().out
    assert "pruned 2 entries" in out and ", 0 entries" in out
    assert main(["cache", "--prune-older-than", "-1"]) == 2
    assert "--prune-older-than" in capsys.readouterr().err


def test_two_runs_paying_for_one_call_at_once_both_record_the_reply_the_cache_keeps(tmp_path):
    """Two processes sharing a cache miss the same key together; the model gives them different replies (llama.cpp's
    outputs can depend on the batch). The first stored is kept, and the second run records it too, not its own: a
    record that differs from the cache's reply is what verify reports as a forgery."""
    first, second = CallCache(tmp_path / "calls.sqlite"), CallCache(tmp_path / "calls.sqlite")

    def slow_call() -> Reply:  # while this run waits on its model, the other run calls, stores and records
        got, cached = second.get_or_call("k", lambda: reply("the other run's reply"), GPT)
        assert (got.text, cached) == ("the other run's reply", False)
        return reply("this run's reply")

    got, cached = first.get_or_call("k", slow_call, GPT)
    assert (got.text, cached) == ("the other run's reply", False)  # paid for, so not counted as a cache hit
    assert first.get("k").text == second.get("k").text == "the other run's reply"
    db = sqlite3.connect(tmp_path / "calls.sqlite")
    assert db.execute("SELECT puts FROM calls WHERE key = 'k'").fetchone() == (2,)
