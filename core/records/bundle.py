"""BUNDLE.json's contract: a published bundle's account of its files (judge.verify.bundle)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from .check import Document, Entry


@dataclass(frozen=True)
class BundleFile(Entry):
    """A results folder's file as a bundle accounts for it: the original's sha256 and how it is published."""

    WHAT: ClassVar[str] = "a file of BUNDLE.json"

    sha256: str  # sha256 of the results folder's original file
    # "verbatim": copied as is; "redacted": line for line with private text withheld; "withheld": left out
    published: Literal["verbatim", "redacted", "withheld"]


@dataclass(frozen=True)
class BundleInfo(Document):
    """BUNDLE.json (judge.verify.publish). Version 1 hashed each withheld value bare and recorded nothing of the gold;
    version 2 commits each with a salt and records what verify cannot compute of the gold; version 3 carries the JSON
    Schema of each document it holds (judge.verify.bundle_schemas)."""

    WHAT: ClassVar[str] = "a bundle's BUNDLE.json"
    VERSION: ClassVar[int] = 3

    type: Literal["bundle"]  # always "bundle"
    run: str  # the run's name (run.json)
    anchor: str  # the results folder's anchor (judge.results.files.anchor)
    files: dict[str, BundleFile]  # each results file the bundle accounts for, by its path in the folder
    private: dict[str, str]  # MANIFEST name -> sha256
    rows: dict[str, list[tuple[str, str]]]  # per line of a redacted file: [the original's, the published one's]
    questions_sha256: str  # sha256 of the bundle's questions.jsonl
    version: int = 1  # this document's version (absent: 1)
    experiment: str | None = None  # the experiment's name (run.json)
    commitments: str | None = None  # how withheld values are committed to, in words; "none" without private sets
    rows_withheld: str | None = None  # "every row", "rows of the private sets' questions" or "none"
    gold_sha256: str | None = None  # absent in version 1
