"""binding.json's contract: the registration, scope and amendment chain a results folder is bound to."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Document, Entry


@dataclass(frozen=True)
class BindingScope(Entry):
    """The arms and question limit a results folder is bound to (arms.folder.bind)."""

    WHAT: ClassVar[str] = "binding.json's scope"

    arms: list[str]
    limit: int | None


@dataclass(frozen=True)
class ChainHead(Entry):
    """The amendment chain as it stood when judging began in the folder: how many amendments, and the hash of the
    last (of MANIFEST without one)."""

    WHAT: ClassVar[str] = "binding.json's amendments"

    count: int
    head: str


@dataclass(frozen=True)
class ScopeChange(Entry):
    """A scope the folder was run with, and when (binding.json's `history`)."""

    WHAT: ClassVar[str] = "a scope of binding.json's history"

    time: str
    arms: list[str]
    limit: int | None


@dataclass(frozen=True)
class Binding(Document):
    """binding.json (arms.folder.bind, judge.results.binding.start_judging): the registration a results folder is bound
    to, by sha256 of each entry, its scope, its label key, the sha256 of its blinding secret and, once judging began,
    the amendment chain. Its version is `schema`."""

    WHAT: ClassVar[str] = "the binding of a results folder (binding.json)"
    VERSION_KEY: ClassVar[str] = "schema"

    registration: dict[str, str]
    scope: BindingScope
    label_key: str  # the experiment's blinding name; the labels of a folder without the next field derive from it
    schema: int = 1
    # the sha256 of the folder's blinding secret (arms.folder.SECRET), which its labels derive from; absent in folders
    # bound before blinding secrets
    blinding_secret_sha256: str = None
    created: str | None = None
    experiment: str | None = None
    experiment_dir: str | None = None
    amendments: ChainHead | None = None
    history: list[ScopeChange] | None = None
