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
def _contract(cls: type) -> tuple[tuple[str, Any, bool, Any, Any], ...]:
    """(field, annotated type, required, what it accepts, its entries' plain types) of a record class, resolved once:
    records are read by the 100,000. What it accepts is None for a field that holds records or typed entries
    (checked by `_value`); of those, a list[str] or dict[str, int] gives (list or dict, the types of its entries), so
    the common case is checked in one pass."""
    hints = typing.get_type_hints(cls)
    out = []
    for f in fields(cls):
        if f.name == "written":
            continue
        hint = hints[f.name]
        origin, args = typing.get_origin(hint), typing.get_args(hint)
        inner = _plain_types(args[-1]) if origin in (list, dict) and args else None
        out.append((f.name, hint, f.default is MISSING and f.default_factory is MISSING,
                    None if _deep(hint) else _accepted(hint), (origin, inner) if inner else None))
    return tuple(out)


def _parts(hint: Any) -> tuple[Any, ...]:
    return typing.get_args(hint) if typing.get_origin(hint) in (typing.Union, types.UnionType) else (hint,)


@cache
def _deep(hint: Any) -> bool:
    """Whether a field of type `hint` holds more than one JSON value to check: an Entry, or a list or object whose
    entries have a type (list[str], dict[str, int], list[Cell])."""
    for h in _parts(hint):
        if isinstance(h, type) and issubclass(h, Entry):
            return True
        if typing.get_origin(h) in (list, dict) and typing.get_args(h)[-1:] not in ((), (Any,)):
            return True
        if typing.get_origin(h) is tuple:
            return True
    return False


def _type_name(hint: Any) -> str:
    return hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "").replace("core.records.", "")


@cache
def _plain_types(hint: Any) -> frozenset[type] | None:
    """The JSON types a value of type `hint` may have when no more is checked inside it (str, a number, a list or
    object of anything); None: it holds entries or typed values to check one by one."""
    if hint is Any:
        return None
    if hint is float:
        return frozenset({int, float})
    if hint in (str, int, bool):
        return frozenset({hint})
    origin = typing.get_origin(hint)
    if origin in (list, dict) and typing.get_args(hint)[-1:] in ((), (Any,)):
        return frozenset({origin})
    return None


def _value(v: Any, hint: Any, file: str | Path, line: int | None, where: str) -> Any:
    """`v` checked against `hint` (entries of lists and objects too, each error naming its path: `cells[2].mean`,
    `judge_totals['j/correctness'].scored`); an Entry is read as its class. BadRecord if it is of another type."""
    for h in _parts(hint):
        origin = typing.get_origin(h)
        if h is Any:
            return v
        if isinstance(h, type) and issubclass(h, Entry):
            if type(v) is dict:
                return h.read(v, file, line, where)
        elif origin is list:
            if type(v) is list:
                (arg,) = typing.get_args(h) or (Any,)
                plain = _plain_types(arg)
                if arg is Any or plain is not None and all(type(x) in plain for x in v):  # list[str]: read by
                    return v  # the 100,000
                return [_value(x, arg, file, line, f"{where}[{i}]") for i, x in enumerate(v)]
        elif origin is dict:
            if type(v) is dict:
                arg = (typing.get_args(h) or (str, Any))[1]
                plain = _plain_types(arg)
                if arg is Any or plain is not None and all(type(x) in plain for x in v.values()):
                    return v
                return {k: _value(x, arg, file, line, f"{where}[{k!r}]") for k, x in v.items()}
        elif origin is tuple:  # a list of a fixed length (an interval, the rubric's scale)
            args = typing.get_args(h)
            if type(v) is list and len(v) == len(args):
                return [_value(x, a, file, line, f"{where}[{i}]") for i, (x, a) in enumerate(zip(v, args, strict=True))]
        elif origin is Literal:
            if type(v) is str and v in typing.get_args(h):
                return v
        elif type(v) is h or (h is float and type(v) is int) or (h is type(None) and v is None):
            return v
    raise BadRecord(file, f"reads {_short(v)}, which is not of type {_type_name(hint)}", line=line, field=where)


def _checked(cls: type, values: dict[str, Any], file: str | Path, line: int | None, prefix: str,
             what: str) -> dict[str, Any]:
    """The contract fields of `values`, each present (or defaulted) and of its type; BadRecord naming file, line and
    field (`prefix` + its name) otherwise. A field holding entries (list[Comparison], dict[str, JudgeTotal]) is read
    entry by entry."""
    kept = {}
    for name, hint, required, accepted, plain in _contract(cls):
        if name not in values:
            if required:
                raise BadRecord(file, f"missing from {what}", line=line, field=prefix + name)
            continue
        v = values[name]
        if plain is not None and type(v) is plain[0] and all(type(x) in plain[1]
                                                              for x in (v if plain[0] is list else v.values())):
            pass  # a list[str] (an answer's calls), a dict[str, int]: of its type, entries included
        elif accepted is None:
            v = _value(v, hint, file, line, prefix + name)
        elif accepted[0] and type(v) not in accepted[0] and not (type(v) is str and v in accepted[1]):
            raise BadRecord(file, f"reads {_short(v)}, which is not of type {_type_name(hint)}", line=line,
                            field=prefix + name)
        elif not accepted[0] and not (type(v) is str and v in accepted[1]):  # a Literal
            raise BadRecord(file, f"reads {_short(v)}, which is not one of {sorted(accepted[1])}", line=line,
                            field=prefix + name)
        kept[name] = v
    return kept


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
    # an answer_first rubric's own answer of the judge (judge.answer_first.JudgeAnswer, whose shape judge verify
    # checks): absent (never null) in a verdict of any other rubric and in older folders. An object of any shape here,
    # as `fields` is: a published bundle withholds its text (judge.bundle)
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
# binding.json, run.json and numbers.json: whole JSON documents, read by the same rule as the raw records, one
# contract per section down to its rows, so that every reader (verify's second path included) reads what it promises
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Entry:
    """An object inside a JSON document (run.json's judge, a comparison of numbers.json): its contract fields checked
    and typed by the raw records' rule (`_checked`), every other key kept as written (`written`), so that `to_dict`
    gives back the object it was read from, key for key and in order, and a file rewritten through its contract is
    the same bytes. A field absent from an older file stays absent. A field with a default and a type without None
    (`family: ComparisonFamily = None`) may be absent (an older file) but never null: the writer never writes null
    there, and its readers read it whenever it is present."""

    WHAT: ClassVar[str]
    # every key as read, in order; keyword-only, so each section's own fields come first and need no default
    written: dict[str, Any] = field(default_factory=dict, repr=False, compare=False, kw_only=True)

    @classmethod
    def read(cls, d: Any, file: str | Path, line: int | None = None, prefix: str = ""):
        """The entry `d` holds (at `prefix` in its file); BadRecord naming file and field if it breaks the contract."""
        if type(d) is not dict:
            raise BadRecord(file, f"reads {_short(d)}, which is not an object ({cls.WHAT})", line=line,
                            field=prefix or None)
        return cls(**_checked(cls, d, file, line, prefix + "." if prefix else "", cls.WHAT), written=dict(d))

    def to_dict(self) -> dict[str, Any]:
        out = dict(self.written)
        for name, _, required, _, _ in _contract(type(self)):
            if name in out or required:
                out[name] = _plain(getattr(self, name))
        return out


def _plain(v: Any) -> Any:
    if isinstance(v, Entry):
        return v.to_dict()
    if type(v) is list:
        return [_plain(x) for x in v]
    if type(v) is dict:
        return {k: _plain(x) for k, x in v.items()}
    return v


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
class BackendIdentity(Entry):
    """What a backend reports of itself (models.cache.call_key's identity): the report names `backend`; the rest is
    kept as written."""

    WHAT: ClassVar[str] = "a backend identity of run.json"

    backend: str


@dataclass(frozen=True)
class RunJudge(Entry):
    """run.json's `judge`: the judges of the run (primary first) and what was read back from them."""

    WHAT: ClassVar[str] = "run.json's judges"

    primary: str  # the judge that decides; every reader of a judged folder reads it
    identity: BackendIdentity  # the primary judge's (models.cache: in every call key); the report shows its backend
    panel: list[str] | None = None  # absent in folders written before judge panels: [primary]
    mode: str | None = None  # single, pairwise or both; absent before pairwise judging: single
    model: str | None = None
    quant: str | None = None
    rubric: str | None = None
    attempts: int | None = None
    scrub: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    identities: dict[str, Any] | None = None
    effective_settings: dict[str, Any] | None = None


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


@dataclass(frozen=True)
class RunInfo(Document):
    """run.json (judge.runinfo builds its registered part, pipeline.run the rest). Required: what every reader reads
    (the report renders the judge's backend and the audit gate); fields that older folders lack are optional;
    run.json carries no `version` key yet (absent is version 1), so its bytes, part of the anchor,
    are those earlier versions wrote."""

    WHAT: ClassVar[str] = "a run record (run.json)"

    name: str
    arms: list[str]
    question_ids: list[str]
    judge: RunJudge
    audit_gate: str  # the report's audit gate line (pipeline.run.check_audit_gate)
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
    cost: list[CostRow] = None  # absent in folders written before costs were kept
    # what a run that can cost money planned to pay, before its first call (judge.budget): absent in older folders
    # and in runs of in-process models only
    cost_estimate: dict[str, Any] | None = None


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
    sd_diff: float
    mean_a: float | None = None
    mean_b: float | None = None
    t_p: float | None = None
    upper: float | None = None
    method: str | None = None
    rule: str = None  # with `resampling` and `units`: absent in results decided before they were recorded
    resampling: str = None
    units: int = None
    resamples: int | None = None
    seed: int | None = None
    guard_low: float | None = None
    guard_high: float | None = None
    scale: tuple[int, int, int] = None  # the rubric's lowest and highest score and K: absent in results decided before
    # the score rule
    tests: list[dict[str, Any]] | None = None


@dataclass(frozen=True)
class Cell(Entry):
    """One (arm, quant) of numbers.json's `cells`: counts and the mean score."""

    WHAT: ClassVar[str] = "a cell of numbers.json"

    arm: str
    quant: str
    answers: int
    answer_errors: int
    answer_retries: int
    truncated: int
    scored: int
    unscored: int
    judge_errors: int
    questions_scored: int
    mean: float | None  # None: no question scored
    harmful: int
    scrubbed: int
    injection_flagged: int
    mean_words: float | None
    answer_error_kinds: dict[str, int] = None  # absent in folders written before causes were counted
    judge_error_kinds: dict[str, int] = None
    score_counts: dict[str, int] = None


@dataclass(frozen=True)
class Subset(Entry):
    """A registered hypothesis on one tag of its questions (secondary, exploratory), in numbers.json's `subsets`."""

    WHAT: ClassVar[str] = "a subset of numbers.json"

    id: str
    alpha_adjusted: float
    result: Result | None
    verdict: str
    paired_questions: list[str]
    hypothesis: str | None = None
    tag: str | None = None
    tests: int | None = None
    questions: int | None = None


@dataclass(frozen=True)
class Calibration(Entry):
    """The decision rule's false-claim rate at the boundary, simulated on data shaped like these
    (judge.stats.calibration)."""

    WHAT: ClassVar[str] = "a comparison's calibration in numbers.json"

    boundary: float
    sims: int
    claims: int
    rate: float
    ceiling: float
    seed: int
    interval: str | None = None  # "ppi" where the gold-corrected interval decides (judge.validity); else the judge's


@dataclass(frozen=True)
class FamilyTest(Entry):
    """One level a hypothesis was tested at by the family procedure (judge.bias_checks.apply_family)."""

    WHAT: ClassVar[str] = "a test of a comparison's family in numbers.json"

    alpha: float
    verdict: str
    claim: bool


@dataclass(frozen=True)
class ComparisonFamily(Entry):
    """Where the family procedure tested one hypothesis, and whether it claims there."""

    WHAT: ClassVar[str] = "a comparison's family in numbers.json"

    method: str
    size: int
    tested_at: float | None
    claimed: bool
    step: int | None
    stopped_at: str | None
    tests: list[FamilyTest]


@dataclass(frozen=True)
class FamilyStep(Entry):
    """One hypothesis in numbers.json's `family` (judge.biases.FamilyStep)."""

    WHAT: ClassVar[str] = "a step of numbers.json's family"

    id: str
    alpha: float
    tested_at: float | None
    claimed: bool
    step: int | None


@dataclass(frozen=True)
class FamilySection(Entry):
    """The registered hypotheses decided as one family (judge.biases.Family)."""

    WHAT: ClassVar[str] = "numbers.json's family"

    method: str
    size: int
    stopped_at: str | None
    steps: list[FamilyStep]


@dataclass(frozen=True)
class Stratum(Entry):
    """One stratum of a PPI++ estimate (judge.stats.ppi.Stratum), named by `id` ((rest): the questions no complete
    stratum holds)."""

    WHAT: ClassVar[str] = "a stratum of a gold-corrected estimate in numbers.json"

    id: str
    name: str | None
    questions: int
    labelled: int
    weight: float
    estimate: float
    lam: float | None
    variance: float


@dataclass(frozen=True)
class Estimate(Entry):
    """A PPI++, gold-only or judge-only estimate of a paired difference (judge.stats.ppi.Estimate)."""

    WHAT: ClassVar[str] = "a gold-corrected estimate in numbers.json"

    method: str
    rule: str
    alpha: float
    estimate: float
    se: float
    df: float | None
    low: float
    high: float
    questions: int
    labelled: int
    strata: list[Stratum]
    step: float | None = None  # rule "guarded"'s pseudo-residual, half the rubric's range; absent before it was
    # anchored to the rubric (one score point then)


@dataclass(frozen=True)
class CorrectedPower(Entry):
    """The gold-corrected decision's power for a random sample of labelled questions (judge.validity.power_plan)."""

    WHAT: ClassVar[str] = "the power of a gold-corrected decision in numbers.json"

    basis: Literal["assumed", "measured"]  # sd_gold and correlation: registered assumption, or measured on the gold
    correlation: float
    sd_judge: float
    sd_gold: float
    gold_questions: int  # random-sample questions with gold they were measured on (0: assumed)
    questions: int
    labelled: int | None  # questions of the recorded draws among them; None: nothing drawn yet
    alpha: float
    step: float
    target: float
    mde: float | None  # None: fewer than 2 labelled
    power_at_margin: float | None  # None: fewer than 2 labelled, or a margin of 0
    labels_needed: int | None  # None: a margin of 0, or more than `questions`
    labels_needed_gold_only: int | None  # the same at correlation 0


@dataclass(frozen=True)
class JudgeError(Entry):
    """A decision corrected for the judge's error against gold (judge.validity.apply); `ppi` None: no correction,
    `reason` says why."""

    WHAT: ClassVar[str] = "a comparison's judge_error in numbers.json"

    mode: str
    design: str | None
    ppi: Estimate | None
    gold_only: Estimate | None
    verdict: str | None
    caution: str | None
    reason: str
    power: CorrectedPower = None  # under judge_error = "decide"; absent in folders decided before it was stated


@dataclass(frozen=True)
class JudgeEstimate(Entry):
    """One judge's estimate and verdict of a hypothesis (judge.bias_checks.self_preference)."""

    WHAT: ClassVar[str] = "a judge's estimate in a comparison's self_preference"

    family: str | None
    shares_family: bool
    n: int
    estimate: float
    ci_low: float
    ci_high: float
    bound: float
    verdict: str
    resampling: str | None = None
    units: int | None = None


@dataclass(frozen=True)
class Lift(Entry):
    """How much more one judge gives arm b over arm a than the other judges do (judge.biases.Lift)."""

    WHAT: ClassVar[str] = "a judge's lift in a comparison's self_preference"

    judge: str
    others: list[str]
    n: int
    estimate: float
    others_estimate: float
    lift: float
    ci_low: float
    ci_high: float
    confidence: float
    resamples: int
    seed: int
    resampling: str | None = None
    units: int | None = None


@dataclass(frozen=True)
class SelfPreference(Entry):
    """Each judge's estimate of a hypothesis and the lift of the judges sharing a model family with an arm."""

    WHAT: ClassVar[str] = "a comparison's self_preference in numbers.json"

    judges: dict[str, JudgeEstimate]
    lifts: dict[str, Lift]
    notes: list[str]


@dataclass(frozen=True)
class Style(Entry):
    """The paired differences with the arms' style differences regressed out (judge.biases.StyleAdjustment)."""

    WHAT: ClassVar[str] = "a comparison's style in numbers.json"

    n: int
    covariates: list[str]
    raw: float
    adjusted: float | None
    se: float | None
    df: int | None
    ci_low: float | None
    ci_high: float | None
    confidence: float
    slopes: dict[str, float] = field(default_factory=dict)
    undefined: str | None = None


@dataclass(frozen=True)
class QuantCheck(Entry):
    """Each arm's mean score at each of its quants (None: none scored)."""

    WHAT: ClassVar[str] = "numbers.json's quant_check"

    means: dict[str, dict[str, float | None]]


@dataclass(frozen=True)
class JudgeTotal(Entry):
    """A judge's verdicts under one rubric (numbers.json's `judge_totals`, keyed `judge/rubric`), by status."""

    WHAT: ClassVar[str] = "a judge's totals in numbers.json"

    scored: int
    unscored: int
    error: int
    repaired: int


@dataclass(frozen=True)
class Amendment(Entry):
    """An amendment of the registration as the numbers were computed with it (judge.analysis.amendments)."""

    WHAT: ClassVar[str] = "an amendment of numbers.json"

    n: int
    date: str
    text: str
    post_hoc: bool | None = None
    before_first_judgment: bool | None = None


@dataclass(frozen=True)
class LengthRow(Entry):
    """One hypothesis's difference b - a by one judge, raw and adjusted for answer length."""

    WHAT: ClassVar[str] = "a comparison of a judge's length bias in numbers.json"

    id: str
    raw_difference: float | None
    length_adjusted_difference: float | None


@dataclass(frozen=True)
class LengthBias(Entry):
    """How a judge's scores follow answer length (judge.agreement.length_bias)."""

    WHAT: ClassVar[str] = "a judge's length bias in numbers.json"

    answers: int
    length_spearman: float | None
    comparisons: list[LengthRow]


@dataclass(frozen=True)
class PairwiseRow(Entry):
    """One judge's pairwise verdicts on one hypothesis, both orders (judge.pairwise.summarise)."""

    WHAT: ClassVar[str] = "a hypothesis's pairwise counts in numbers.json"

    hypothesis: str
    pairs: int
    both_orders_scored: int
    consistent: int
    wins_b: int
    wins_a: int
    ties: int
    a: str | None = None
    b: str | None = None
    quant: str | None = None
    unscored_verdicts: int | None = None
    consistency_rate: float | None = None
    first_position_share: float | None = None


@dataclass(frozen=True)
class AgreementPair(Entry):
    """Two judges' agreement on the answers both scored (judge.agreement.agreement)."""

    WHAT: ClassVar[str] = "a pair of judges' agreement in numbers.json"

    judges: list[str]
    answers: int
    exact_agreement: float
    kappa_quadratic: float | None
    kappa_ci95: tuple[float, float] | None


@dataclass(frozen=True)
class Agreement(Entry):
    """The judges' agreement: per pair, and Krippendorff's alpha over every answer two of them scored."""

    WHAT: ClassVar[str] = "numbers.json's judges agreement"

    answers: int
    pairs: list[AgreementPair]
    pairable_answers: int
    krippendorff_alpha_ordinal: float | None
    judges: list[str] | None = None


@dataclass(frozen=True)
class RetestRow(Entry):
    """One judge's verdicts against the same verdicts asked again (judge.biases.RetestAgreement)."""

    WHAT: ClassVar[str] = "a judge's retest in numbers.json"

    judge: str
    drawn: int
    n: int
    flips: int
    flip_rate: float | None
    flip_ci95: tuple[float, float] | None
    kappa_quadratic: float | None
    kappa_ci95: tuple[float, float] | None


@dataclass(frozen=True)
class DecisionChanged(Entry):
    """A registered decision that changes when the primary judge's retest scores replace the originals."""

    WHAT: ClassVar[str] = "a decision the retests change in numbers.json"

    id: str
    verdict: str
    with_retests: str


@dataclass(frozen=True)
class RetestSection(Entry):
    """The judges' verdicts asked again (judge.bias_checks.retest_section)."""

    WHAT: ClassVar[str] = "numbers.json's judges retest"

    judges: dict[str, RetestRow]
    decisions_changed: list[DecisionChanged]
    replaced: int


@dataclass(frozen=True)
class Offset(Entry):
    """The judge's score minus the gold score, with its bootstrap interval (judge.stats.judge_error.Offset)."""

    WHAT: ClassVar[str] = "an offset of a judge against gold in numbers.json"

    n: int
    mean: float
    low: float
    high: float
    resampling: str
    units: int


@dataclass(frozen=True)
class ArmOffset(Entry):
    """A judge's offset against gold on one arm's answers (None: fewer than two)."""

    WHAT: ClassVar[str] = "an arm's offset in numbers.json"

    id: str
    offset: Offset | None


@dataclass(frozen=True)
class GoldAgreement(Entry):
    """A judge against every gold score of the answers it scored (judge.stats.judge_error.GoldAgreement)."""

    WHAT: ClassVar[str] = "a judge's agreement with gold in numbers.json"

    answers: int
    exact: float
    kappa: float | None
    kappa_low: float | None
    kappa_high: float | None
    krippendorff_alpha: float | None
    krippendorff_low: float | None
    krippendorff_high: float | None
    scale: list[int]
    confusion: list[list[int]]
    offset: Offset | None
    per_arm: list[ArmOffset]
    alpha: float
    resamples: int
    seed: int
    # absent in folders whose agreement intervals resampled answers ("answer"); now whole questions are resampled
    resampling: Literal["answer", "question"] = None
    exact_low: float = None  # exact agreement's bootstrap interval, on the same resamples (absent before it had one)
    exact_high: float = None
    # absent in folders whose agreement intervals were percentile intervals; now BCa over questions
    interval: Literal["bca"] = None


@dataclass(frozen=True)
class GoldPair(Entry):
    """The judge's offset on arm b minus that on arm a, per question, on one hypothesis's questions."""

    WHAT: ClassVar[str] = "a hypothesis's differential offset in numbers.json"

    id: str
    a: str
    b: str
    quant: str
    questions: int
    offset_difference: Offset | None


@dataclass(frozen=True)
class GoldDesigns(Entry):
    """Gold scores by the design that chose their answers (judge.gold: a random sample, complete strata, or picked by
    hand)."""

    WHAT: ClassVar[str] = "gold designs in numbers.json"

    random_sample: int
    complete_strata: int
    convenience: int


@dataclass(frozen=True)
class GoldSources(Entry):
    """Gold scores by where they came from: sealed labels files, the registered program, people's labels."""

    WHAT: ClassVar[str] = "gold sources in numbers.json"

    labels: int
    program: int
    human: int


@dataclass(frozen=True)
class JudgeAgainstGold(Entry):
    """One judge against the gold scores (judge.validity.judge_against_gold)."""

    WHAT: ClassVar[str] = "a judge of numbers.json's judge_validity"

    id: str
    gold_scores: int
    designs: GoldDesigns
    agreement: GoldAgreement | None  # None: no answer it scored has gold
    pairs: list[GoldPair]


@dataclass(frozen=True)
class GoldDraw(Entry):
    """A seeded sample of questions drawn for labelling (core.records.LabelSample), as the gold scores used it."""

    WHAT: ClassVar[str] = "a gold sample draw in numbers.json"

    labeller: str
    seed: int
    n: int
    picked: list[str]
    # why the draw is not a random sample (its labels count as convenience): absent when it is, and in folders
    # written before draws were drawn again
    problem: str = None


@dataclass(frozen=True)
class GoldSummary(Entry):
    """The gold scores of the run: how many, from which source and by which design."""

    WHAT: ClassVar[str] = "numbers.json's judge_validity gold"

    answers: int
    with_gold: int
    scores: int
    undecided: int
    errors: int
    sources: GoldSources
    designs: GoldDesigns
    complete_strata: list[str]
    program: str | None
    draws: list[GoldDraw]


@dataclass(frozen=True)
class JudgeValidity(Entry):
    """The judges measured against gold (judge.validity.apply)."""

    WHAT: ClassVar[str] = "numbers.json's judge_validity"

    gold: GoldSummary
    judges: list[JudgeAgainstGold]
    primary: str
    mode: str
    min_gold_agreement: float | None


@dataclass(frozen=True)
class JudgesSection(Entry):
    """numbers.json's `judges`: each judge's means, length bias, pairwise consistency, and their agreement."""

    WHAT: ClassVar[str] = "numbers.json's judges"

    panel: list[str]
    means: dict[str, dict[str, float]]
    length_bias: dict[str, LengthBias]
    pairwise: dict[str, list[PairwiseRow]]
    agreement: Agreement | None  # None: one judge only
    retest: RetestSection = None  # absent without `[judge] retest`


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
    subset: list[str]
    paired_questions: list[str]
    unscored_rate: dict[str, float]
    clusters: int | None  # registered clusters among the paired questions; None: the set declares none
    clustered_se: float | None
    calibration: Calibration | None
    quant_notes: list[str]
    questions_in_subset: int | None = None
    family: ComparisonFamily = None  # absent in folders decided before the family
    judge_error: JudgeError = None  # absent without registered gold
    self_preference: SelfPreference | None = None
    style: Style | None = None
    length_notes: list[str] = None


@dataclass(frozen=True)
class Numbers(Document):
    """numbers.json (judge.analysis.compute_numbers): its version is `schema`. Sections added since the first
    version (family, panel_rule, judge_validity) are optional. Each section is an Entry of its own, read and written
    by the same contract: a field missing or of another type at any depth is bad input naming its path
    (`comparisons[2].judge_error.ppi.low`)."""

    WHAT: ClassVar[str] = "the numbers of a run (numbers.json)"
    VERSION_KEY: ClassVar[str] = "schema"

    experiment: str
    judge: str
    questions: int
    raw_sha256: dict[str, str]
    cells: list[Cell]
    comparisons: list[Comparison]
    subsets: list[Subset]
    quant_check: QuantCheck
    judge_totals: dict[str, JudgeTotal]
    amendments: list[Amendment]
    judges: JudgesSection
    schema: int = 1
    family: FamilySection | None = None
    panel_rule: str | None = None
    judge_validity: JudgeValidity | None = None


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
    """binding.json (arms.folder.bind, judge.folder.start_judging): the registration a results folder is bound to, by
    sha256 of each entry, its scope, its label key, the sha256 of its blinding secret and, once judging began, the
    amendment chain. Its version is `schema`."""

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


# ----------------------------------------------------------------------------------------
# BUNDLE.json: a published bundle's account of its files (judge.bundle)
# ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BundleFile(Entry):
    """A results folder's file as a bundle accounts for it: the original's sha256 and how it is published."""

    WHAT: ClassVar[str] = "a file of BUNDLE.json"

    sha256: str
    published: Literal["verbatim", "redacted", "withheld"]


@dataclass(frozen=True)
class BundleInfo(Document):
    """BUNDLE.json (judge.bundle.publish). Version 1 (the previous one) hashed each withheld value bare and recorded
    nothing of the gold; version 2 commits each with a salt and records what verify cannot compute of the gold."""

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
