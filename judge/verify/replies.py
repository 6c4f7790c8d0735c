"""The call caches `judge verify` looks a folder's recorded calls up in, and what it found there."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from models.backends.base import Reply
from models.cache import CallCache


class Replies:
    """The call caches a folder's recorded calls are looked up in: those `judge verify --cache` names, else the
    environment's (BLINDEVAL_CACHE or ~/.cache/blindeval), never one the folder names. Every call a run makes is
    stored in its cache before the record holding its key is written, so in the cache the run wrote to every
    recorded key is present; one that is absent was never a call of that run. A cache that holds none of the
    folder's calls is not the run's cache. With no cache at all (`--no-cache`) nothing is looked up, and verify
    says so."""

    def __init__(self, paths: list[Path]):
        self.paths = list(paths)
        self.caches = [CallCache(p) for p in self.paths if p.is_file()]
        self.found = 0
        self.missing: list[tuple[str, str]] = []  # (file:line: field, key)
        self.looked: set[str] = set()  # where each recorded call was looked up: counted once

    def get(self, key: Any, where: str) -> Reply | None:
        """The cached reply of call `key` recorded at `where` (file:line: field), or None (then noted as missing)."""
        if not self.paths:
            return None
        reply = next((r for c in self.caches if isinstance(key, str) and (r := c.get(key)) is not None), None)
        if where not in self.looked:
            self.looked.add(where)
            self.found += reply is not None
            if reply is None:
                self.missing.append((where, str(key)))
        return reply

    def findings(self) -> tuple[list[str], list[str]]:
        """(findings, unchecked) once every recorded call was looked up."""
        shown = ", ".join(map(str, self.paths))
        total = self.found + len(self.missing)
        if not self.paths:
            return [], ["call cache: none consulted (--no-cache): the stored replies and call keys were not compared "
                        "with the calls the run made, so a consistent rewrite of replies, answers and call keys "
                        "would pass; the anchor recorded elsewhere is then the only check against it"]
        if total == 0:
            return [], []
        if not self.caches:
            return [f"call cache: {shown} does not exist, so none of the {total} recorded calls could be compared "
                    "with the calls the run made. Name the cache the run wrote to with `judge verify RESULTS --cache "
                    "PATH`, or verify without one with `--no-cache` (reported as unchecked)"], []
        if self.found == 0:
            return [f"call cache: {shown} holds none of the {total} calls this folder records: it is not the cache "
                    "the run wrote to, or the calls were rewritten. Name the run's cache with `--cache PATH`, or "
                    "verify without one with `--no-cache` (reported as unchecked)"], []
        return [f"{where}: call {key[:12]}… is in no call cache consulted ({shown}), which holds the folder's other "
                f"{self.found} calls: a run stores every call in its cache before it writes the record naming it"
                for where, key in self.missing], []

    def close(self) -> None:
        for cache in self.caches:
            cache.close()
