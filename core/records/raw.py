"""The record contracts of the raw files, in one place every layer may import.

answers.jsonl holds answer rows; blinding.jsonl holds blinding keys (single answers) and pair keys
(pairwise); judgments.jsonl holds judgments; retests.jsonl (only with `[judge] retest`) the verdicts asked
again. Each record is written with its `type` and `version`,
and read back by `from_dict`, which refuses a missing or ill-typed field as BadRecord (bad input) naming the
file, the line and the field (exit 2), never a TypeError. Older folders read unchanged: a record
without `version` is version 1, one without `type` is taken as its file's kind, and a judgment
without `kind` is inferred from its label (pair labels start with P, see `judgment_kind`).

An answer or judgment whose `status` is `error` is retried by the next run (core.jsonl's retry rule):
the key's last record is its current one.
"""
from __future__ import annotations

import hashlib
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Literal

from ..errors import BadRecord
from .check import _checked

ANSWER_KEY = ("row",)  # the key of the retry rule: `row` is the hash of (arm, quant, question, sample)
JUDGMENT_KEY = ("judge", "label")  # the key of the retry rule (single labels start L, pair labels P)
RETEST_KEY = ("judge", "label", "retest")  # retests.jsonl: a verdict asked again, numbered from 1


def row_id(*parts: object) -> str:
    """Stable identity of a row from its coordinates (used for resume and joins)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:24]


class Record:
    """What every raw record shares: its `type`, its `version`, and a checked `from_dict`."""

    TYPE: ClassVar[str]
    VERSION: ClassVar[int] = 1

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.TYPE, "version": self.VERSION, **asdict(self)}

    @classmethod
    def from_dict(cls, d: dict[str, Any], file: str | Path = "<record>", line: int | None = None):
        """The record `d` holds; BadRecord naming file, line and field if one is missing or of the wrong type."""
        version = d.get("version", 1)  # written since records carry versions: absent is version 1
        if type(version) is not int or not 1 <= version <= cls.VERSION:
            raise BadRecord(file, f"reads {version!r}; this version of blindeval reads {cls.TYPE} records of "
                            f"version 1 to {cls.VERSION}", line=line, field="version")
        if d.get("type", cls.TYPE) != cls.TYPE:
            raise BadRecord(file, f"reads {d['type']!r}, expected {cls.TYPE!r}", line=line, field="type")
        return cls(**_checked(cls, cls._upgrade(d), file, line, "", f"this {cls.TYPE} record"))

    @classmethod
    def _upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        """The fields of an older version's record as the current version names them (none changed yet)."""
        return d


@dataclass(frozen=True)
class AnswerRow(Record):
    """One current row per (arm, quant, question, sample) in answers.jsonl."""

    TYPE: ClassVar[str] = "answer"

    row: str  # core.records.raw.row_id(arm, quant, question_id, sample): the key of the retry rule
    arm: str  # the arm's name in prereg.toml
    quant: str  # the arm's quantisation (model file variant) this answer came from
    question_id: str  # the question's id in its set
    sample: int  # 0-based sample number of this question for this arm and quant
    status: str  # "ok" | "error"
    text: str | None  # the final answer (after glue); None on error
    raw_output: str | None  # what the model itself wrote (last call)
    finish_reason: str | None  # the last call's finish reason; "glue" when the glue made no call; None on error
    truncated: bool  # the last call stopped at its token limit (False on error)
    prompt_tokens: int  # input tokens summed over the model calls made for this answer (arms.collect)
    completion_tokens: int  # output tokens summed over the model calls made for this answer
    latency_s: float  # seconds spent on the model calls (on error: wall time until the failure), rounded to 0.1 ms
    model_sha256: str | None  # sha256 of the model file, from the backend's identity; None when the backend names none
    lora_sha256: str | None  # comma-separated when several adapters are applied
    settings: dict[str, Any]  # registered generation settings, with this sample's seed
    calls: list[str] = field(default_factory=list)  # cache keys of the model calls made
    cached_calls: int = 0  # how many of them came from the cache (0 new cost)
    trace: dict[str, Any] | None = None  # glue trace: retrieved ids, prompt, raw output
    error: dict[str, Any] | str | None = None  # models.retry.describe(); a plain message in older rows
    effective: dict[str, Any] | None = None  # read back from the backend: file, template, adapters, sampling as sent
    thinking: bool = False  # the model's (last) reply showed thinking: compare with settings["thinking"]
    # the backend identity in every call key (models.cache.call_key); None in rows written before rows recorded it
    identity: dict[str, Any] | None = None


@dataclass(frozen=True)
class KeyRow(Record):
    """One line of blinding.jsonl: label -> system. Only analysis reads it."""

    TYPE: ClassVar[str] = "blinding"

    label: str  # the blinded label the judge sees: L + 12 hex digits of an HMAC of `row` (judge.judging.blinding)
    row: str  # the answer row's id (AnswerRow.row)
    arm: str  # the arm that wrote the answer
    quant: str  # the arm's quantisation
    question_id: str  # the question's id in its set
    sample: int  # the answer's sample number
    scrubbed: int  # identity-revealing matches removed from this answer
    injection: int = 0  # grader-directed text found in this answer (counted, shown, never obeyed)


@dataclass(frozen=True)
class PairKey(Record):
    """One line of blinding.jsonl for a pair: which system was shown first."""

    TYPE: ClassVar[str] = "pair"

    label: str  # the blinded pair label the judge sees (judge.judging.pairwise.pair_label)
    hypothesis: str  # the id of the registered hypothesis whose two arms are compared
    question_id: str  # the question's id in its set
    quant: str  # the hypothesis's quantisation: both answers are of it
    first: str  # arm shown first
    second: str  # arm shown second


def blinding_key(d: dict[str, Any], file: str | Path = "<record>", line: int | None = None) -> KeyRow | PairKey:
    """A line of blinding.jsonl as the key it is: by its `type`, else (no type) a pair key if it names a hypothesis."""
    kind = d.get("type") or ("pair" if "hypothesis" in d else "blinding")
    cls = {"blinding": KeyRow, "pair": PairKey}.get(kind)
    if cls is None:
        raise BadRecord(file, f"reads {kind!r}, expected 'blinding' or 'pair'", line=line, field="type")
    return cls.from_dict(d, file, line)


def judgment_kind(d: dict[str, Any]) -> str:
    """What a judgment judged. Written as `kind` since judgments carry it; before that, inferred from the label:
    a pair's label starts with P (judge.judging.pairwise), a single answer's with L (judge.judging.blinding), an
    audit's with A."""
    kind = d.get("kind")
    if kind is not None:
        return kind
    return "pairwise" if str(d.get("label", "")).startswith("P") else "single"


@dataclass(frozen=True)
class Judgment(Record):
    """One current row per (judge, blinded label) in judgments.jsonl (and the audit's verdicts.jsonl)."""

    TYPE: ClassVar[str] = "judgment"

    judge: str  # the judge's name in prereg.toml
    label: str  # the blinded label judged (KeyRow.label or PairKey.label)
    question_id: str  # the question's id in its set
    status: str  # "scored" | "unscored" (no parseable verdict) | "error" (the judge call itself failed)
    score: int | None  # None unless scored: a parse failure is never a zero
    # the parsed verdict object (its score field and any others the rubric asks for); None unless scored
    fields: dict[str, Any] | None
    repaired: bool  # the verdict parsed only after repairing its JSON (judge.judging.verdict.parse_verdict)
    error: str | None  # why there is no score (the last parse error or the failed call); None when scored
    prompt_sha256: str  # sha256 of the first attempt's request (judge.judging.calls.prompt_sha256)
    attempts: list[dict[str, Any]]  # every raw judge output with its parse error
    latency_s: float  # seconds, summed over the judge calls of all attempts, rounded to 0.1 ms
    prompt_tokens: int  # input tokens summed over all attempts
    completion_tokens: int  # output tokens summed over all attempts
    cached_tokens: int  # input tokens the backend reported as served from its prompt cache, summed over all attempts
    calls: list[str] = field(default_factory=list)  # cache keys of the judge calls made, one per attempt
    cached_calls: int = 0  # how many of them came from the call cache (0 new cost)
    time: str | None = None  # UTC time the verdict was recorded: amendments must predate the first one
    rubric: str = "correctness"  # the name of the rubric that produced it: shown, never matched on
    kind: Literal["single", "pairwise"] = "single"  # what it judged: analysis selects verdicts by this
    # an answer_first rubric's own answer of the judge (judge.judging.answer_first.JudgeAnswer, whose shape judge
    # verify checks): absent (never null) in a verdict of any other rubric and in older folders. An object of any
    # shape here, as `fields` is: a published bundle withholds its text (judge.verify.bundle)
    judge_answer: dict[str, Any] | None = None

    @classmethod
    def _upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        return d if "kind" in d else {**d, "kind": judgment_kind(d)}

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        if self.judge_answer is None:  # a verdict of a rubric that asks for none is written as before
            d.pop("judge_answer", None)
        return d


@dataclass(frozen=True)
class Retest(Judgment):
    """One current row per (judge, blinded label, retest) in retests.jsonl: a single answer's verdict asked again
    (`[judge] retest`), as a call of its own (the retest number is in its call key), to measure how often the judge
    would have answered otherwise. Never read as a verdict of the decisions: judgments.jsonl holds those."""

    TYPE: ClassVar[str] = "retest"

    retest: int = field(kw_only=True)  # 1 for the first re-ask of this label


@dataclass(frozen=True)
class HumanLabel(Record):
    """One line of a labels file: a person's score for one blinded answer, given in review.html's blind mode
    (`judge view --blind`), which downloads the file; judge.gold.labels reads and checks it.

    The file is hash-chained like amendments.jsonl (core.jsonl.link): the first record's `prev` is its
    `run_key`, each next record's the link of the record before it."""

    TYPE: ClassVar[str] = "label"

    run_key: str  # the run's labels key (judge.gold.labels.run_key): a hash of its label key, never the key itself
    label: str  # the blinded label of the answer (L…), as the judge saw it
    score: int  # on the run's rubric scale
    note: str  # "" when the labeller wrote none
    labeller: str  # who gave the score: its file is labels/<labeller>.jsonl
    time: str  # ISO 8601 with a UTC offset, when the score was entered
    prev: str  # the hash chain


@dataclass(frozen=True)
class GoldLabel(Record):
    """One line of a sealed gold labels file (registered as `[gold] labels`): a gold score for an answer named by its
    question and the sha256 of its text as the judge saw it (judge.judging.blinding: normalised, identity text
    scrubbed), so it applies to that answer in any run of the experiment, whatever arm wrote it. judge.gold.sources
    reads it."""

    TYPE: ClassVar[str] = "gold"

    question_id: str  # the question's id in its set
    answer_sha256: str  # sha256 of the UTF-8 bytes of the answer as the judge saw it
    score: int  # on the experiment's rubric scale
    labeller: str  # who or what gave it
    time: str  # ISO 8601 with a UTC offset
    note: str = ""  # the labeller's free-text note; "" when none


@dataclass(frozen=True)
class LabelSample(Record):
    """One line of a results folder's labels/_samples.jsonl: a seeded random sample of questions drawn by
    `judge label --sample N --seed S` (judge.numbers.stats.ppi.label_sample over `population`), so anyone holding the
    ids and the seed can draw it again and see the labelled questions were not picked by hand."""

    TYPE: ClassVar[str] = "label_sample"

    labeller: str  # who draws and will label the sample (`judge label --labeller`)
    seed: int  # the seed given as `--seed S`
    n: int  # the sample size given as `--sample N`
    population: list[str]  # the run's question ids it was drawn from
    picked: list[str]  # judge.numbers.stats.ppi.label_sample(population, n, seed)
    time: str  # ISO 8601 with a UTC offset, when it was drawn


@dataclass(frozen=True)
class PublicQuestion(Record):
    """One line of a published bundle's questions.jsonl (judge.verify.bundle): a question of a private set as the bundle
    shows it, without its text: what the numbers read of it (its tags and cluster) and the sha256 of its question and
    reference (UTF-8), by which anyone holding the set can check it."""

    TYPE: ClassVar[str] = "question"

    id: str  # the question's id in its set
    set: str  # the set's MANIFEST name, e.g. "sets/exam.jsonl"
    line: int  # its line in the set
    tags: list[str]  # the question's tags, as the set gives them
    cluster: str | None  # the question's cluster; None when it has none
    question_sha256: str  # sha256(salt ‖ text) (judge.verify.withheld.commitment), salted from bundle.secret
    reference_sha256: str | None  # None: the question has no reference
