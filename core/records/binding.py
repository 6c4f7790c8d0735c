"""binding.json's contract: the registration, scope and amendment chain a results folder is bound to."""
from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from .check import Document, Entry


@dataclass(frozen=True)
class BindingScope(Entry):
    """The arms and question limit a results folder is bound to (arms.folder.bind)."""

    WHAT: ClassVar[str] = "binding.json's scope"

    arms: list[str]  # the arms the folder is bound to, by name
    limit: int | None  # the bound --limit: the first N questions of the sets; None for all


@dataclass(frozen=True)
class ChainHead(Entry):
    """The amendment chain as it stood when judging began in the folder: how many amendments, and the hash of the
    last (of MANIFEST without one)."""

    WHAT: ClassVar[str] = "binding.json's amendments"

    count: int  # amendments in amendments.jsonl when judging began
    head: str  # sha256 of the last of them (of MANIFEST without one)


@dataclass(frozen=True)
class ScopeChange(Entry):
    """A scope the folder was run with, and when (binding.json's `history`)."""

    WHAT: ClassVar[str] = "a scope of binding.json's history"

    time: str  # when this scope was bound: ISO 8601, UTC (arms.folder.now)
    arms: list[str]  # the arms of that scope
    limit: int | None  # the --limit of that scope; None for all questions


@dataclass(frozen=True, kw_only=True)
class Binding(Document):
    """binding.json (arms.folder.bind, judge.results.binding.start_judging): the registration a results folder is bound
    to, by sha256 of each entry, its scope, its label key, the sha256 of its blinding secret and, once judging began,
    the amendment chain. Its version is `schema`; its fields are in the order binding.json holds them."""

    WHAT: ClassVar[str] = "the binding of a results folder (binding.json)"
    VERSION_KEY: ClassVar[str] = "schema"

    schema: int = 1  # this document's version
    created: str | None = None  # when the folder was first bound: ISO 8601, UTC
    experiment: str | None = None  # the experiment's name
    experiment_dir: str | None = None  # the experiment folder's path when the folder was first bound
    label_key: str  # the experiment's blinding name; the labels of a folder without the next field derive from it
    # the sha256 of the folder's blinding secret (arms.folder.SECRET), which its labels derive from; absent in folders
    # bound before blinding secrets
    blinding_secret_sha256: str = None
    registration: dict[str, str]  # each bound entry (settings, files' sha256, judges, mode) by name (arms.folder)
    scope: BindingScope  # the arms and --limit it is bound to now
    # the amendment chain when judging began (judge.results.binding.start_judging); None before
    amendments: ChainHead | None = None
    history: list[ScopeChange] | None = None  # every scope the folder was run with, oldest first
