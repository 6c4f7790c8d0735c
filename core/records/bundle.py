"""BUNDLE.json's contract: a published bundle's account of its files (judge.verify.bundle)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Literal

from .check import Document, Entry


@dataclass(frozen=True)
class BundleFile(Entry):
    """A results folder's file as a bundle accounts for it: the original's sha256 and how it is published."""

    WHAT: ClassVar[str] = "a file of BUNDLE.json"

    sha256: str
    published: Literal["verbatim", "redacted", "withheld"]


@dataclass(frozen=True)
class BundleInfo(Document):
    """BUNDLE.json (judge.verify.bundle.publish). Version 1 (the previous one) hashed each withheld value bare and
    recorded nothing of the gold; version 2 commits each with a salt and records what verify cannot compute of the
    gold."""

    WHAT: ClassVar[str] = "a bundle's BUNDLE.json"
    VERSION: ClassVar[int] = 2

    type: Literal["bundle"]
    run: str
    anchor: str
    files: dict[str, BundleFile]
    private: dict[str, str]  # MANIFEST name -> sha256
    rows: dict[str, list[tuple[str, str]]]  # per line of a redacted file: [the original's, the published one's]
    questions_sha256: str
    version: int = 1
    experiment: str | None = None
    commitments: str | None = None
    rows_withheld: str | None = None
    gold_sha256: str | None = None  # absent in version 1
