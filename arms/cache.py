"""Content-addressed cache of finished model calls, so no finished call is ever paid for twice.

Keyed by sha256 of (backend identity, request). Lives outside git (BLINDEVAL_CACHE, default
~/.cache/blindeval) and is shared by every run, so `--limit 5` then a full run reuses the five.
SQLite commits are atomic: a kill loses at most the call in flight. Failed calls are not cached.
"""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
from pathlib import Path
from typing import Any

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
        self._db = sqlite3.connect(self.path, check_same_thread=False, timeout=60)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, reply TEXT NOT NULL)")
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
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?)", (key, json.dumps(reply.to_dict())))
            self._db.commit()

    def close(self) -> None:
        self._db.close()
