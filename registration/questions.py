"""Sealed question sets: one JSON object per line with id, question, reference, tags, cluster.

A set is read by core.jsonl's COMPLETE rule (`read_sealed`): every non-blank line is a question, the last
one with or without a final newline, in strict UTF-8 with LF or CRLF line ends. It is not an append-only raw
file, so nothing is ever skipped as torn.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core import jsonl
from core.errors import BadInput


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    reference: str | None
    tags: tuple[str, ...]
    cluster: str | None
    set: str  # the set file's name, e.g. "exam.jsonl"
    line: int = 0  # its line in that file, for messages about it


def load_questions(paths: list[Path]) -> list[Question]:
    """Read and validate every set; duplicate ids across sets, and a set without questions, are bad input."""
    out: list[Question] = []
    where: dict[str, str] = {}
    for path in paths:
        if not path.is_file():
            raise BadInput(path, "question set not found")
        before = len(out)
        for no, rec in jsonl.read_sealed(path, required=("id", "question")):
            qid = rec["id"]
            if not isinstance(qid, str) or not qid:
                raise BadInput(path, "must be a non-empty string", line=no, field="id")
            if qid in where:
                raise BadInput(path, f"duplicate question id {qid!r} (first at {where[qid]})", line=no, field="id")
            where[qid] = f"{path.name}:{no}"
            if not isinstance(rec["question"], str) or not rec["question"].strip():
                raise BadInput(path, "must be a non-empty string", line=no, field="question")
            tags = rec.get("tags", [])
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise BadInput(path, "must be a list of strings", line=no, field="tags")
            ref = rec.get("reference")
            if ref is not None and not isinstance(ref, str):
                raise BadInput(path, "must be a string", line=no, field="reference")
            out.append(Question(id=qid, question=rec["question"], reference=ref, tags=tuple(tags),
                                cluster=_cluster(rec.get("cluster"), path, no), set=path.name, line=no))
        if len(out) == before:
            raise BadInput(path, "the question set holds no questions: a run on it would report on nothing")
    return out


def _cluster(value: object, path: Path, line: int) -> str | None:
    """A cluster label is a string or an integer (kept as its decimal text, so 3 and "3" are one cluster)."""
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str) and value:
        return value
    raise BadInput(path, f"must be a non-empty string or an integer naming the question's cluster, got {value!r}",
                   line=line, field="cluster")
