"""Content-addressed cache of finished model calls, so no finished call is ever paid for twice.

Keyed by sha256 of (backend identity, request). Lives outside git (BLINDEVAL_CACHE, default
~/.cache/blindeval) and is shared by every run, so `--limit 5` then a full run reuses the five.
SQLite commits are atomic: a kill loses at most the call in flight. Failed calls are not cached.
Each key also counts how often a reply was stored for it: more than once means a finished call
was paid for again, which the resume tests assert never happens.

So that it can be inspected and pruned (`python -m judge cache`), each entry also keeps the model it came
from (from the backend's identity) and when it was last stored or read, and a cache opened for a results
folder records which folders used which entries: `uses` (call key, folder), written with the reply when a
call is paid for, and in groups when a call is read, and `runs` (every folder that opened the cache).
Entries stored before these existed have no model and count as used when the cache first recorded times.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .backends.base import Reply, Request


def cache_dir() -> Path:
    d = Path(os.environ.get("BLINDEVAL_CACHE", Path.home() / ".cache" / "blindeval"))
    d.mkdir(parents=True, exist_ok=True)
    return d


def call_key(identity: dict[str, Any], request: Request) -> str:
    blob = json.dumps({"identity": identity, "request": request.to_dict()}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


FLUSH_USES = 64  # reads recorded in one commit: a commit per read would cost a sync each
FLUSH_S = 2.0  # ...or as often as this, whichever comes first


def model_label(identity: dict[str, Any]) -> str:
    """Which model a call went to, for people: the backend and its model (a local file by its sha256, with its
    adapters)."""
    model = identity.get("model") or (identity.get("model_sha256") or "?")[:16]
    loras = identity.get("lora_sha256") or []
    return " ".join([str(identity.get("backend", "?")), str(model)] + [f"+ LoRA {s[:8]}" for s in loras])


class CallCache:
    """sqlite table key -> reply JSON. Thread-safe for the HTTP backends' worker threads. `run`: the results folder
    this cache is opened for, recorded beside every entry it stores or reads (None: record no folder)."""

    def __init__(self, path: Path | None = None, run: Path | None = None):
        self.path = Path(path) if path else cache_dir() / "calls.sqlite"
        self.run = str(Path(run).resolve()) if run is not None else None
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}
        self._read: dict[str, float] = {}  # keys read since the last flush -> when
        self._flushed = time.time()
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}
        for column, kind in (("puts", "INTEGER NOT NULL DEFAULT 1"), ("model", "TEXT"), ("used", "REAL")):
            if column not in columns:
                _add_column(self._db, column, kind)
        if "used" not in columns:  # entries stored before times were recorded: used when the cache first did
            self._db.execute("UPDATE calls SET used = ? WHERE used IS NULL", (time.time(),))
        self._db.execute("CREATE TABLE IF NOT EXISTS uses (key TEXT NOT NULL, run TEXT NOT NULL, "
                         "PRIMARY KEY (key, run)) WITHOUT ROWID")
        self._db.execute("CREATE TABLE IF NOT EXISTS runs (run TEXT PRIMARY KEY, opened REAL NOT NULL)")
        if self.run is not None:
            self._db.execute("INSERT INTO runs (run, opened) VALUES (?, ?) ON CONFLICT(run) DO UPDATE "
                             "SET opened = excluded.opened", (self.run, time.time()))
        self._db.commit()
        self.hits = 0
        self.misses = 0
        # asked before each call that is not answered from the cache, with the backend's identity and the request
        # (a cost ceiling: judge.judging.budget); it may refuse the call by raising, and returns what to do with the
        # reply
        self.guard: Callable[[dict[str, Any], Any], Callable[[Reply | None], None]] | None = None
        # reads not yet recorded are recorded when the cache is closed, or when the run's process ends
        self._finalizer = weakref.finalize(self, _finish, self._db, self._lock, self._read, self.run)

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM calls WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
            self._read[key] = time.time()
            if len(self._read) >= FLUSH_USES or time.time() - self._flushed >= FLUSH_S:
                self._flush()
                self._db.commit()
        return Reply.from_dict(json.loads(row[0]))

    def put(self, key: str, reply: Reply, identity: dict[str, Any] | None = None) -> Reply:
        """Store a paid call's reply and return the reply the cache holds for the key: the first one stored. Another
        process sharing the cache may have paid for the same call meanwhile, and a model need not give the same
        reply twice (llama.cpp's outputs can depend on what else is in the batch): the first stored reply is kept,
        and the caller records the one returned, so every record of a key is the reply its cache entry holds and
        verify, comparing the two, finds an honest folder honest. `identity` (the backend's) names the model."""
        with self._lock:
            now = time.time()
            self._db.execute("INSERT INTO calls (key, reply, puts, model, used) VALUES (?, ?, 1, ?, ?) "
                             "ON CONFLICT(key) DO UPDATE SET puts = puts + 1, "
                             "model = COALESCE(model, excluded.model), used = excluded.used",
                             (key, json.dumps(reply.to_dict()), identity and model_label(identity), now))
            held = self._db.execute("SELECT reply FROM calls WHERE key = ?", (key,)).fetchone()[0]
            if self.run is not None:
                self._db.execute("INSERT OR IGNORE INTO uses (key, run) VALUES (?, ?)", (key, self.run))
            self._flush()
            self._db.commit()
        return Reply.from_dict(json.loads(held))

    def get_or_call(self, key: str, call: Callable[[], Reply],
                    identity: dict[str, Any] | None = None) -> tuple[Reply, bool]:
        """(reply, came_from_cache). Concurrent callers of one key wait for the first instead of calling twice."""
        with self._lock:
            gate = self._inflight.setdefault(key, threading.Lock())
        with gate:
            reply = self.get(key)
            if reply is not None:
                return reply, True
            return self.put(key, call(), identity), False

    def _flush(self) -> None:
        """Record the reads since the last flush (under the lock; the caller commits)."""
        _record_reads(self._db, self._read, self.run)
        self._flushed = time.time()

    def close(self) -> None:
        self._finalizer()


def _record_reads(db: sqlite3.Connection, read: dict[str, float], run: str | None) -> None:
    db.executemany("UPDATE calls SET used = MAX(COALESCE(used, 0), ?) WHERE key = ?", [(t, k) for k, t in read.items()])
    if run is not None:
        db.executemany("INSERT OR IGNORE INTO uses (key, run) VALUES (?, ?)", [(k, run) for k in read])
    read.clear()


def _finish(db: sqlite3.Connection, lock: threading.Lock, read: dict[str, float], run: str | None) -> None:
    with lock:
        _record_reads(db, read, run)
        db.commit()
    db.close()


def _add_column(db: sqlite3.Connection, column: str, kind: str) -> None:
    try:
        db.execute(f"ALTER TABLE calls ADD COLUMN {column} {kind}")
    except sqlite3.OperationalError as e:  # another process added it first
        if "duplicate column" not in str(e):
            raise


@dataclass(frozen=True)
class Summary:
    """What the cache holds: its files' size, entries and reply bytes by model, and the folders that used it."""

    path: str
    bytes: int
    entries: int
    by_model: list[tuple[str, int, int]]  # (model, entries, reply bytes), most entries first
    runs: list[tuple[str, bool, int]]  # (folder, still on disk, entries it used)
    oldest_use: float | None
    untracked: int  # entries no recorded folder used (stored before folders were recorded, or outside a run)


def files_size(path: Path) -> int:
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal"), Path(f"{path}-shm")) if p.exists())


def summary(cache: CallCache) -> Summary:
    db = cache._db
    with cache._lock:
        cache._flush()
        db.commit()
        by_model = db.execute("SELECT COALESCE(model, '(not recorded)'), COUNT(*), SUM(LENGTH(reply)) FROM calls "
                              "GROUP BY model ORDER BY COUNT(*) DESC, model").fetchall()
        runs = db.execute("SELECT runs.run, COUNT(calls.key) FROM runs LEFT JOIN uses ON uses.run = runs.run "
                          "LEFT JOIN calls ON calls.key = uses.key GROUP BY runs.run ORDER BY runs.run").fetchall()
        entries, oldest = db.execute("SELECT COUNT(*), MIN(used) FROM calls").fetchone()
        untracked = db.execute("SELECT COUNT(*) FROM calls WHERE key NOT IN (SELECT key FROM uses)").fetchone()[0]
    return Summary(str(cache.path), files_size(cache.path), entries, [(m, n, b or 0) for m, n, b in by_model],
                   [(r, Path(r).is_dir(), n) for r, n in runs], oldest, untracked)


def referenced(folder: Path) -> set[str]:
    """Call keys the records of a results folder name (answers, verdicts, the audit's verdicts: their `calls`)."""
    keys: set[str] = set()
    for path in Path(folder).glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                calls = json.loads(line).get("calls")
            except (ValueError, AttributeError):
                continue  # a torn last line, or not a record: it names nothing
            if isinstance(calls, list):
                keys.update(k for k in calls if isinstance(k, str))
    return keys


def prune(cache: CallCache, older_than_days: float | None = None, gone_runs: bool = False) -> tuple[int, int]:
    """Delete the entries unused for `older_than_days`, and (`gone_runs`) those every folder that used them is gone
    from disk. An entry a folder on disk names in its records is kept, and counted as that folder's (its read was
    not recorded: the run was killed before it was). Returns (entries deleted, bytes the cache's files shrank by)."""
    before = files_size(cache.path)
    db = cache._db
    deleted = 0
    with cache._lock:
        cache._flush()
        if older_than_days is not None:
            cutoff = time.time() - older_than_days * 86400
            deleted += db.execute("DELETE FROM calls WHERE used < ?", (cutoff,)).rowcount
        if gone_runs:
            runs = [r for (r,) in db.execute("SELECT run FROM runs UNION SELECT run FROM uses")]
            gone = [r for r in runs if not Path(r).is_dir()]
            names = {r: referenced(Path(r)) for r in runs if Path(r).is_dir()}
            db.execute("CREATE TEMP TABLE IF NOT EXISTS gone (run TEXT PRIMARY KEY)")
            db.execute("DELETE FROM gone")
            db.executemany("INSERT OR IGNORE INTO gone (run) VALUES (?)", [(r,) for r in gone])
            only_gone = [k for (k,) in db.execute("SELECT key FROM uses GROUP BY key "
                                                  "HAVING SUM(run NOT IN (SELECT run FROM gone)) = 0")]
            for key in only_gone:  # a folder on disk that names it used it (its read was not recorded: a kill)
                users = [r for r, named in names.items() if key in named]
                db.executemany("INSERT OR IGNORE INTO uses (key, run) VALUES (?, ?)", [(key, r) for r in users])
                deleted += 0 if users else db.execute("DELETE FROM calls WHERE key = ?", (key,)).rowcount
            db.execute("DELETE FROM uses WHERE run IN (SELECT run FROM gone)")
            db.execute("DELETE FROM runs WHERE run IN (SELECT run FROM gone)")
        db.execute("DELETE FROM uses WHERE key NOT IN (SELECT key FROM calls)")
        db.commit()
        db.execute("VACUUM")
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return deleted, before - files_size(cache.path)
