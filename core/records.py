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
import json
import types
import typing
from dataclasses import MISSING, asdict, dataclass, field, fields
from functools import cache
from pathlib import Path
from typing import Any, ClassVar, Literal

from . import jsonl
from .errors import BadInput, BadRecord

ANSWER_KEY = ("row",)  # the key of the retry rule: `row` is the hash of (arm, quant, question, sample)
JUDGMENT_KEY = ("judge", "label")  # the key of the retry rule (single labels start L, pair labels P)
RETEST_KEY = ("judge", "label", "retest")  # retests.jsonl: a verdict asked again, numbered from 1


def row_id(*parts: object) -> str:
    """Stable identity of a row from its coordinates (used for resume and joins)."""
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()[:24]


def _accepted(hint: Any) -> tuple[frozenset[type], frozenset[str]] | None:
    """The exact JSON types (a bool is not an int; an int is a float) and the Literal strings a field of type `hint`
    accepts; None: anything."""
    origin = typing.get_origin(hint)
    if hint is Any:
        return None
    if origin in (typing.Union, types.UnionType):
        parts = [_accepted(h) for h in typing.get_args(hint)]
        if None in parts:
            return None
        return frozenset().union(*(t for t, _ in parts)), frozenset().union(*(v for _, v in parts))
    if origin is Literal:
        return frozenset(), frozenset(typing.get_args(hint))
    return frozenset({int, float} if hint is float else {origin or hint}), frozenset()


@cache
def _contract(cls: type) -> tuple[tuple[str, Any, bool, Any], ...]:
    """(field, annotated type, required, what it accepts) of a record class, resolved once: records are read by
    the 100,000."""
    hints = typing.get_type_hints(cls)
    return tuple((f.name, hints[f.name], f.default is MISSING and f.default_factory is MISSING,
                  _accepted(hints[f.name])) for f in fields(cls) if f.name != "written")


@cache
def _nested(cls: type) -> dict[str, tuple[Any, Any, bool]]:
    """Of an Entry class's fields: (the Entry it holds, the Entry its list holds, whether it is a list of str)."""
    return {name: (_one_entry(hint), _entry_type(hint), _of_str(hint)) for name, hint, _, _ in _contract(cls)}


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")


def _checked(cls: type, values: dict[str, Any], file: str | Path, line: int | None, prefix: str,
             what: str) -> dict[str, Any]:
    """The contract fields of `values`, each present (or defaulted) and of its type; BadRecord naming file, line and
    field (`prefix` + its name) otherwise. A list of records (list[Comparison]) is read entry by entry."""
    kept = {}
    nested = _nested(cls) if issubclass(cls, Entry) else {}
    for name, hint, required, accepted in _contract(cls):
        if name not in values:
            if required:
                raise BadRecord(file, f"missing from {what}", line=line, field=prefix + name)
            continue
        v = values[name]
        one, entry, of_str = nested.get(name, (None, None, False))
        if one is not None and (v is not None or hint is one):
            v = one.read(v, file, line, prefix + name)
        elif entry is not None and type(v) is list:
            v = [entry.read(x, file, line, f"{prefix}{name}[{i}]") for i, x in enumerate(v)]
        elif accepted and type(v) not in accepted[0] and not (type(v) is str and v in accepted[1]):
            raise BadRecord(file, f"reads {_short(v)}, which is not of type {_type_name(hint)}", line=line,
                            field=prefix + name)
        elif of_str and type(v) is list:
            for i, x in enumerate(v):
                if type(x) is not str:
                    raise BadRecord(file, f"entry {i} reads {x!r}, which is not a str", line=line, field=prefix + name)
        kept[name] = v
    return kept


def _of_str(hint: Any) -> bool:
    """A field typed list[str] (or list[str] | None): its entries are checked too."""
    return any(typing.get_origin(h) is list and typing.get_args(h) == (str,)
               for h in (typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType)
                         else (hint,)))


def _one_entry(hint: Any) -> Any:
    """The Entry class of a field typed SomeEntry or SomeEntry | None, else None."""
    for h in typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,):
        if isinstance(h, type) and issubclass(h, Entry):
            return h
    return None


def _entry_type(hint: Any) -> Any:
    """The Entry class of a field typed list[SomeEntry], else None."""
    for h in typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,):
        if typing.get_origin(h) is list:
            (arg,) = typing.get_args(h) or (None,)
            if isinstance(arg, type) and issubclass(arg, Entry):
                return arg
    return None


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

    row: str
    arm: str
    quant: str
    question_id: str
    sample: int
    status: str  # "ok" | "error"
    text: str | None  # the final answer (after glue); None on error
    raw_output: str | None  # what the model itself wrote (last call)
    finish_reason: str | None
    truncated: bool
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    model_sha256: str | None
    lora_sha256: str | None  # comma-separated when several adapters are applied
    settings: dict[str, Any]  # registered generation settings, with this sample's seed
    calls: list[str] = field(default_factory=list)  # cache keys of the model calls made
    cached_calls: int = 0  # how many of them came from the cache (0 new cost)
    trace: dict[str, Any] | None = None  # glue trace: retrieved ids, prompt, raw output
    error: dict[str, Any] | str | None = None  # models.retry.describe(); a plain message in older rows
    effective: dict[str, Any] | None = None  # read back from the backend: file, template, adapters, sampling as sent
    thinking: bool = False  # the model's (last) reply showed thinking: compare with settings["thinking"]
    identity: dict[str, Any] | None = None  # the backend identity in every call key (models.cache.call_key); None in
    # rows written before rows recorded it


@dataclass(frozen=True)
class KeyRow(Record):
    """One line of blinding.jsonl: label -> system. Only analysis reads it."""

    TYPE: ClassVar[str] = "blinding"

    label: str
    row: str
    arm: str
    quant: str
    question_id: str
    sample: int
    scrubbed: int  # identity-revealing matches removed from this answer
    injection: int = 0  # grader-directed text found in this answer (counted, shown, never obeyed)


@dataclass(frozen=True)
class PairKey(Record):
    """One line of blinding.jsonl for a pair: which system was shown first."""

    TYPE: ClassVar[str] = "pair"

    label: str
    hypothesis: str
    question_id: str
    quant: str
    first: str  # arm shown first
    second: str


def blinding_key(d: dict[str, Any], file: str | Path = "<record>", line: int | None = None) -> KeyRow | PairKey:
    """A line of blinding.jsonl as the key it is: by its `type`, else (no type) a pair key if it names a hypothesis."""
    kind = d.get("type") or ("pair" if "hypothesis" in d else "blinding")
    cls = {"blinding": KeyRow, "pair": PairKey}.get(kind)
    if cls is None:
        raise BadRecord(file, f"reads {kind!r}, expected 'blinding' or 'pair'", line=line, field="type")
    return cls.from_dict(d, file, line)


def judgment_kind(d: dict[str, Any]) -> str:
    """What a judgment judged. Written as `kind` since judgments carry it; before that, inferred from the label:
    a pair's label starts with P (judge.pairwise), a single answer's with L (judge.blinding), an audit's with A."""
    kind = d.get("kind")
    if kind is not None:
        return kind
    return "pairwise" if str(d.get("label", "")).startswith("P") else "single"


@dataclass(frozen=True)
class Judgment(Record):
    """One current row per (judge, blinded label) in judgments.jsonl (and the audit's verdicts.jsonl)."""

    TYPE: ClassVar[str] = "judgment"

    judge: str
    label: str
    question_id: str
    status: str  # "scored" | "unscored" (no parseable verdict) | "error" (the judge call itself failed)
    score: int | None  # None unless scored: a parse failure is never a zero
    fields: dict[str, Any] | None
    repaired: bool
    error: str | None
    prompt_sha256: str
    attempts: list[dict[str, Any]]  # every raw judge output with its parse error
    latency_s: float
    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int
    calls: list[str] = field(default_factory=list)
    cached_calls: int = 0
    time: str | None = None  # UTC time the verdict was recorded: amendments must predate the first one
    rubric: str = "correctness"  # the name of the rubric that produced it: shown, never matched on
    kind: Literal["single", "pairwise"] = "single"  # what it judged: analysis selects verdicts by this

    @classmethod
    def _upgrade(cls, d: dict[str, Any]) -> dict[str, Any]:
        return d if "kind" in d else {**d, "kind": judgment_kind(d)}


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
    (`judge view --blind`), which downloads the file; judge.labels reads and checks it.

    The file is hash-chained like amendments.jsonl (core.jsonl.link): the first record's `prev` is its
    `run_key`, each next record's the link of the record before it."""

    TYPE: ClassVar[str] = "label"

    run_key: str  # the run's labels key (judge.labels.run_key): a hash of its label key, never the key itself
    label: str  # the blinded label of the answer (L…), as the judge saw it
    score: int  # on the run's rubric scale
    note: str  # "" when the labeller wrote none
    labeller: str
    time: str  # ISO 8601 with a UTC offset, when the score was entered
    prev: str  # the hash chain


@dataclass(frozen=True)
class GoldLabel(Record):
    """One line of a sealed gold labels file (registered as `[gold] labels`): a gold score for an answer named by its
    question and the sha256 of its text as the judge saw it (judge.blinding: normalised, identity text scrubbed), so
    it applies to that answer in any run of the experiment, whatever arm wrote it. judge.gold reads it."""

    TYPE: ClassVar[str] = "gold"

    question_id: str
    answer_sha256: str  # sha256 of the UTF-8 bytes of the answer as the judge saw it
    score: int  # on the experiment's rubric scale
    labeller: str  # who or what gave it
    time: str  # ISO 8601 with a UTC offset
    note: str = ""


@dataclass(frozen=True)
class LabelSample(Record):
    """One line of a results folder's labels/_samples.jsonl: a seeded random sample of questions drawn by
    `judge label --sample N --seed S` (judge.stats.ppi.label_sample over `population`), so anyone holding the ids and
    the seed can draw it again and see the labelled questions were not picked by hand."""

    TYPE: ClassVar[str] = "label_sample"

    labeller: str
    seed: int
    n: int
    population: list[str]  # the run's question ids it was drawn from
    picked: list[str]  # judge.stats.ppi.label_sample(population, n, seed)
    time: str  # ISO 8601 with a UTC offset, when it was drawn


@dataclass(frozen=True)
class PublicQuestion(Record):
    """One line of a published bundle's questions.jsonl (judge.bundle): a question of a private set as the bundle
    shows it, without its text: what the numbers read of it (its tags and cluster) and the sha256 of its question and
    reference (UTF-8), by which anyone holding the set can check it."""

    TYPE: ClassVar[str] = "question"

    id: str
    set: str  # the set's MANIFEST name, e.g. "sets/exam.jsonl"
    line: int  # its line in the set
    tags: list[str]
    cluster: str | None
    question_sha256: str
    reference_sha256: str | None  # None: the question has no reference


# ----------------------------------------------------------------------------------------
# run.json and numbers.json: whole JSON documents, read by the same rule as the raw records
# ----------------------------------------------------------------------------------------


class Entry:
    """An object inside a JSON document (run.json's judge, a comparison of numbers.json): its contract fields checked
    and typed by the raw records' rule (`_checked`), every other key kept as written (`written`), so that `to_dict`
    gives back the object it was read from, key for key and in order, and a file rewritten through its contract is
    the same bytes. A field absent from an older file stays absent."""

    WHAT: ClassVar[str]
    written: dict[str, Any]

    @classmethod
    def read(cls, d: Any, file: str | Path, line: int | None = None, prefix: str = ""):
        """The entry `d` holds (at `prefix` in its file); BadRecord naming file and field if it breaks the contract."""
        if type(d) is not dict:
            raise BadRecord(file, f"reads {_short(d)}, which is not an object ({cls.WHAT})", line=line,
                            field=prefix or None)
        return cls(**_checked(cls, d, file, line, prefix + "." if prefix else "", cls.WHAT), written=dict(d))

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.written)
        for name, _, required, _ in _contract(type(self)):
            if name in out or required:
                out[name] = _plain(getattr(self, name))
        return out


def _plain(v: Any) -> Any:
    return v.to_dict() if isinstance(v, Entry) else [_plain(x) for x in v] if type(v) is list else v


def _short(v: Any) -> str:
    text = repr(v)
    return text if len(text) <= 200 else text[:197] + "..."


class Document(Entry):
    """A whole JSON file (run.json, numbers.json). Its version is read from VERSION_KEY (absent: version 1, as a raw
    record without `version`): a file of a later version than this blindeval reads is refused, never misread."""

    VERSION: ClassVar[int] = 1
    VERSION_KEY: ClassVar[str] = "version"

    @classmethod
    def from_dict(cls, d: Any, file: str | Path):
        if type(d) is not dict:
            raise BadRecord(file, f"holds {type(d).__name__} {_short(d)}, not the JSON object of {cls.WHAT}")
        version = d.get(cls.VERSION_KEY, 1)
        if type(version) is not int or not 1 <= version <= cls.VERSION:
            raise BadRecord(file, f"reads {version!r}; this version of blindeval reads {cls.WHAT} of version 1 to "
                            f"{cls.VERSION}", field=cls.VERSION_KEY)
        return cls.read(d, file)

    @classmethod
    def read_file(cls, path: str | Path):
        """The document in the file at `path`: BadInput naming the file and line if it is not JSON (a duplicate key
        included), BadRecord naming the field if it breaks the contract."""
        path = Path(path)
        try:
            doc = jsonl.loads(path.read_text(encoding="utf-8"))
        except jsonl.DuplicateKey as e:
            raise BadInput(path, "appears twice in one JSON object", field=e.key) from None
        except json.JSONDecodeError as e:
            raise BadInput(path, f"not valid JSON: {e.msg} (column {e.colno})", line=e.lineno) from None
        except UnicodeDecodeError as e:
            raise BadInput(path, f"not UTF-8 text: {e.reason} at byte {e.start}") from None
        return cls.from_dict(doc, path)

    def text(self) -> str:
        """The file's text, as `judge run` writes it (indent 1, one newline at the end)."""
        return json.dumps(self.to_dict(), indent=1) + "\n"


@dataclass(frozen=True)
class RunJudge(Entry):
    """run.json's `judge`: the judges of the run (primary first) and what was read back from them."""

    WHAT: ClassVar[str] = "run.json's judges"

    primary: str | None = None  # always written; absent only in a record made by hand
    panel: list[str] | None = None  # absent in folders written before judge panels: [primary]
    mode: str | None = None  # single, pairwise or both; absent before pairwise judging: single
    model: str | None = None
    quant: str | None = None
    rubric: str | None = None
    attempts: int | None = None
    scrub: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    identity: dict[str, Any] | None = None
    identities: dict[str, Any] | None = None
    effective_settings: dict[str, Any] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class CostRow(Entry):
    """One arm's or judge's line of run.json's `cost` (judge.cost): tokens as the rows record them, and USD at the
    registered prices (None without one)."""

    WHAT: ClassVar[str] = "a cost row of run.json"

    role: str
    name: str
    model: str
    rows: int
    input_tokens: int
    output_tokens: int
    batch_input_tokens: int
    batch_output_tokens: int
    usd: float | None
    price_input: float | None = None
    price_output: float | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class RunInfo(Document):
    """run.json (judge.runinfo builds its registered part, pipeline.run the rest). Fields that older folders lack
    are optional; run.json carries no `version` key yet (absent is version 1), so its bytes, part of the anchor,
    are those earlier versions wrote."""

    WHAT: ClassVar[str] = "a run record (run.json)"

    name: str
    arms: list[str]
    question_ids: list[str]
    judge: RunJudge
    experiment: str | None = None
    seed: int | None = None
    limit: int | None = None
    hashes: dict[str, Any] | None = None
    label_key: str | None = None
    runtime: dict[str, Any] | None = None
    analysis: dict[str, Any] | None = None
    experiment_dir: str | None = None
    effective_settings: dict[str, Any] | None = None
    quant_files: dict[str, Any] | None = None
    audit_gate: str | None = None
    cost: list[CostRow] | None = None  # absent in folders written before costs were kept
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Result(Entry):
    """A paired comparison's numbers (judge.stats.paired), in a comparison or a subset of numbers.json. Required:
    what the report formats as numbers; the rest is typed when present."""

    WHAT: ClassVar[str] = "a paired result of numbers.json"

    n: int
    diff: float
    se: float
    ci_low: float
    ci_high: float
    bound: float
    sign_p: float
    t_low: float
    t_high: float
    mde: float
    confidence: float
    corr: float | None
    up: int
    down: int
    ties: int
    n_for_margin: int | None
    mean_a: float | None = None
    mean_b: float | None = None
    sd_diff: float | None = None
    t_p: float | None = None
    upper: float | None = None
    method: str | None = None
    rule: str | None = None
    resampling: str | None = None
    units: int | None = None
    resamples: int | None = None
    seed: int | None = None
    guard_low: float | None = None
    guard_high: float | None = None
    scale: list[Any] | None = None
    tests: list[dict[str, Any]] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Cell(Entry):
    """One (arm, quant) of numbers.json's `cells`: counts and the mean score."""

    WHAT: ClassVar[str] = "a cell of numbers.json"

    arm: str
    quant: str
    answers: int | None = None
    answer_errors: int | None = None
    answer_error_kinds: dict[str, Any] | None = None
    answer_retries: int | None = None
    truncated: int | None = None
    scored: int | None = None
    unscored: int | None = None
    judge_errors: int | None = None
    judge_error_kinds: dict[str, Any] | None = None
    questions_scored: int | None = None
    mean: float | None = None
    harmful: int | None = None
    scrubbed: int | None = None
    injection_flagged: int | None = None
    mean_words: float | None = None
    score_counts: dict[str, Any] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Subset(Entry):
    """A registered hypothesis on one tag of its questions (secondary, exploratory), in numbers.json's `subsets`."""

    WHAT: ClassVar[str] = "a subset of numbers.json"

    id: str
    alpha_adjusted: float
    result: Result | None
    verdict: str
    hypothesis: str | None = None
    tag: str | None = None
    tests: int | None = None
    questions: int | None = None
    paired_questions: list[str] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class JudgesSection(Entry):
    """numbers.json's `judges`: each judge's means, length bias, pairwise consistency, and their agreement."""

    WHAT: ClassVar[str] = "numbers.json's judges"

    panel: list[str]
    means: dict[str, Any]
    length_bias: dict[str, Any]
    pairwise: dict[str, Any] | None = None
    agreement: dict[str, Any] | None = None
    retest: dict[str, Any] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Comparison(Entry):
    """A registered hypothesis decided, in numbers.json's `comparisons`: what verify and the report read most."""

    WHAT: ClassVar[str] = "a comparison of numbers.json"

    id: str
    text: str
    a: str
    b: str
    quant: str
    kind: str
    margin: float
    alpha: float
    result: Result | None  # None: no paired question was scored
    verdict: str
    reason: str
    subset: list[str] | None = None
    questions_in_subset: int | None = None
    paired_questions: list[str] | None = None
    unscored_rate: dict[str, Any] | None = None
    clusters: int | None = None
    clustered_se: float | None = None
    calibration: dict[str, Any] | None = None
    family: dict[str, Any] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Numbers(Document):
    """numbers.json (judge.analysis.compute_numbers): its version is `schema`. Sections added since the first
    version (family, panel_rule, judge_validity) are optional."""

    WHAT: ClassVar[str] = "the numbers of a run (numbers.json)"
    VERSION_KEY: ClassVar[str] = "schema"

    experiment: str
    judge: str
    questions: int
    raw_sha256: dict[str, Any]
    cells: list[Cell]
    comparisons: list[Comparison]
    subsets: list[Subset]
    quant_check: dict[str, Any]
    judge_totals: dict[str, Any]
    amendments: list[dict[str, Any]]
    judges: JudgesSection
    schema: int = 1
    family: dict[str, Any] | None = None
    panel_rule: str | None = None
    judge_validity: dict[str, Any] | None = None
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
