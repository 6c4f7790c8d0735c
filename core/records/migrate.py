"""Older documents brought up to the version this blindeval writes, one step at a time, before their contract
checks them (core.records.check.Document.from_dict), so that every reader reads one form: a folder written by an
earlier version is read, verified and rendered as it was written, its migration said, never refused or misread.

A step is a plain function from a document of one version to the next (old dict -> new dict), registered in STEPS
by the document's contract and the version it reads; a document is migrated by every step from its version up.
A step never drops or alters a value the numbers were computed from: the file on disk is not rewritten (its bytes
are what the anchor hashes), only what is read of it. A version with no step to the next (BUNDLE.json's first) is
read as written, by readers that know it.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable


@dataclass(frozen=True)
class Step:
    """One migration: what it does, in words (said whenever it is taken), and the function that does it."""

    what: str
    change: Callable[[dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Migrated:
    """A step taken on a document as it was read: the file, the version it was written as, the one it was read as."""

    file: str
    version: int
    to: int
    what: str

    def __str__(self) -> str:
        return f"{self.file}: written as version {self.version}, read as version {self.to}: {self.what}"


def numbers_1_to_2(d: dict[str, Any]) -> dict[str, Any]:
    """numbers.json said `"schema": 1` while sections were added to it; version 2 names the form with them all."""
    return {**d, "schema": 2}


def run_1_to_2(d: dict[str, Any]) -> dict[str, Any]:
    """run.json carried no version before version 2 (or `"version": 1`): the key is put first, as the writer writes
    it."""
    return {"version": 2, **{k: v for k, v in d.items() if k != "version"}}


# (contract class name, the version a step reads) -> the step to the next version
STEPS: dict[tuple[str, int], Step] = {
    ("Numbers", 1): Step("the version number only: the sections added while numbers.json said schema 1 (family, "
                         "panel_rule, judge_validity, contamination, stability, comparisons' judge_error) stay "
                         "optional, absent where the folder was written before them", numbers_1_to_2),
    ("RunInfo", 1): Step("`version` added (run.json wrote none before version 2); no field changes", run_1_to_2),
}


def upgrade(contract: str, d: dict[str, Any], key: str, to: int,
            file: str | Path) -> tuple[dict[str, Any], tuple[Migrated, ...]]:
    """`d`, a document of contract `contract` whose version is read from `key` (absent: 1), migrated step by step up
    to version `to`, and each step taken; `d` as it is where no step leads on."""
    version = d.get(key, 1)
    taken = []
    while version < to and (contract, version) in STEPS:
        step = STEPS[contract, version]
        d = step.change(d)
        if d.get(key) != version + 1:  # a step gives the next version, or the chain would never end
            raise ValueError(f"the migration of {contract} from version {version} gives version {d.get(key)!r}")
        taken.append(Migrated(Path(file).name, version, version + 1, step.what))
        version += 1
    return d, tuple(taken)
