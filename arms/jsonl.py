"""Append-only JSONL: the raw files are the source of truth, so a kill must never corrupt them.

Each record is one line, written with a single write() of the whole line, flushed and fsynced.
A kill can leave at most one partial last line; readers skip it (reporting it) and the next
writer truncates it away before appending, so earlier records are never touched.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

from .errors import BadInput


def dumps(record: dict[str, Any]) -> str:
    """Canonical one-line JSON (sorted keys) so hashes of records are stable."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def repair_tail(path: Path) -> int:
    """Drop a partial last line left by a kill; return the number of bytes removed."""
    if not path.exists():
        return 0
    size = path.stat().st_size
    if size == 0:
        return 0
    with open(path, "rb+") as f:
        f.seek(-1, os.SEEK_END)
        if f.read(1) == b"\n":
            return 0
        # walk back to the previous newline
        pos = size - 1
        chunk = 4096
        while pos > 0:
            start = max(0, pos - chunk)
            f.seek(start)
            buf = f.read(pos - start)
            i = buf.rfind(b"\n")
            if i >= 0:
                cut = start + i + 1
                break
            pos = start
        else:
            cut = 0
        f.truncate(cut)
        f.flush()
        os.fsync(f.fileno())
        return size - cut


class Appender:
    """Appends records to one JSONL file, durably, one line per record."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        repair_tail(self.path)
        self._f = open(self.path, "a", encoding="utf-8")

    def write(self, record: dict[str, Any]) -> None:
        self._f.write(dumps(record) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self) -> "Appender":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read(path: Path, *, required: tuple[str, ...] = ()) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (line number, record). A partial last line (no newline) is skipped; any other bad line is BadInput."""
    path = Path(path)
    if not path.exists():
        return
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    complete = lines[:-1]  # the last element is "" after a final newline, or a partial record
    for no, raw in enumerate(complete, start=1):
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise BadInput(path, f"not valid JSON ({e})", line=no) from None
        if not isinstance(rec, dict):
            raise BadInput(path, "a record must be a JSON object", line=no)
        for key in required:
            if key not in rec:
                raise BadInput(path, "missing", line=no, field=key)
        yield no, rec
