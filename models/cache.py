"""Content-addressed cache of finished model calls, so no finished call is ever paid for twice.

Keyed by sha256 of (backend identity, request). Lives outside git (BLINDEVAL_CACHE, default
~/.cache/blindeval) and is shared by every run, so `--limit 5` then a full run reuses the five.
SQLite commits are atomic: a kill loses at most the call in flight. Failed calls are not cached.
Each key also counts how often a reply was stored for it: more than once means a finished call
was paid for again, which the resume tests assert never happens.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
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


class CallCache:
    """sqlite table key -> reply JSON. Thread-safe for the HTTP backends' worker threads."""

    def __init__(self, path: Path | None = None):
        self.path = Path(path) if path else cache_dir() / "calls.sqlite"
        self._lock = threading.Lock()
        self._inflight: dict[str, threading.Lock] = {}
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}
        if "puts" not in columns:
            self._db.execute("ALTER TABLE calls ADD COLUMN puts INTEGER NOT NULL DEFAULT 1")
        self._db.commit()
        self.hits = 0
        self.misses = 0

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute("SELECT reply FROM calls WHERE key = ?", (key,)).fetchone()
            if row is None:
                self.misses += 1
                return None
            self.hits += 1
        return Reply.from_dict(json.loads(row[0]))

    def put(self, key: str, reply: Reply) -> None:
        with self._lock:
            self._db.execute("INSERT INTO calls (key, reply, puts) VALUES (?, ?, 1) ON CONFLICT(key) DO UPDATE "
                             "SET reply = excluded.reply, puts = puts + 1", (key, json.dumps(reply.to_dict())))
            self._db.commit()

    def get_or_call(self, key: str, call: Callable[[], Reply]) -> tuple[Reply, bool]:
        """(reply, came_from_cache). Concurrent callers of one key wait for the first instead of calling twice."""
        with self._lock:
            gate = self._inflight.setdefault(key, threading.Lock())
        with gate:
            reply = self.get(key)
            if reply is not None:
                return reply, True
            reply = call()
            self.put(key, reply)
            return reply, False

    def close(self) -> None:
        self._db.close()
