"""What a bundle holds of a value it withholds, and what verify reads in its place.

A withheld value is replaced by {"withheld": sha256(salt ‖ value)} (a text's UTF-8, anything else with "json": true
its canonical JSON); an answer's text keeps its number of words ("words") and its counts of the registered style
covariates ("style"), all the numbers read of it. Each salt is HMAC-SHA256 of the results folder's `bundle.secret`
and the value's place (Salts), so no guess confirms a value and the team opens one commitment by revealing its salt.
Verifying, each withheld value is stood in for by what the numbers can read of it (`stand_in`).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import BadInput

from ..numbers.biases import style_counts

SECRET = "bundle.secret"  # in the results folder: the key every salt of its bundles derives from
ANSWER_PUBLIC = frozenset({"type", "version", "row", "arm", "quant", "question_id", "sample", "status", "finish_reason",
                           "truncated", "prompt_tokens", "completion_tokens", "latency_s", "model_sha256",
                           "lora_sha256", "settings", "calls", "cached_calls", "effective", "thinking", "identity",
                           "retry_of"})
JUDGMENT_PUBLIC = frozenset({"type", "version", "judge", "label", "question_id", "status", "score", "repaired",
                             "prompt_sha256", "latency_s", "prompt_tokens", "completion_tokens", "cached_tokens",
                             "calls", "cached_calls", "time", "rubric", "kind", "retry_of", "retest"})
LABEL_PUBLIC = frozenset({"type", "version", "run_key", "label", "score", "labeller", "time"})  # note, prev withheld
ERROR_PUBLIC = frozenset({"type", "kind", "status"})  # of a failure (models.retry.describe): its message may quote
ATTEMPT_PUBLIC = frozenset({"finish_reason", "repaired"})
STAND_IN = "withheld"


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def is_sha256(x: Any) -> bool:
    return isinstance(x, str) and len(x) == 64 and not x.strip("0123456789abcdef")


def commitment(salt: bytes, data: bytes) -> str:
    """sha256(salt ‖ value): without the salt no guess of the value can be confirmed; given it, anyone checks it."""
    return sha256_of(salt + data)


@dataclass(frozen=True)
class Salts:
    """The salts of a results folder's bundles: each value's salt is HMAC-SHA256(key, its place), a 256-bit value no
    other salt, commitment or value tells, so revealing one opens that commitment and nothing else. The key (256
    random bits) is the results folder's `bundle.secret`, made by the first `judge publish` and never published."""

    key: bytes

    def salt(self, place: str) -> bytes:
        return hmac.new(self.key, place.encode("utf-8"), hashlib.sha256).digest()

    def commit(self, place: str, data: bytes) -> str:
        return commitment(self.salt(place), data)


def read_salts(path: Path) -> Salts:
    """A `bundle.secret` file: 64 hex digits."""
    try:
        text = Path(path).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(path, f"cannot be read as a bundle secret: {e}") from None
    if not is_sha256(text):
        raise BadInput(path, "is not a bundle secret (64 hex digits): the salts of a bundle derive from it, so it is "
                       "never rewritten; restore it from a backup")
    return Salts(bytes.fromhex(text))


def folder_salts(run_dir: Path) -> Salts:
    """The results folder's salts, its `bundle.secret` made (256 random bits, owner-only, never replaced) if absent,
    so that every bundle of the folder commits each value the same way and its commitments can be opened later."""
    path = Path(run_dir) / SECRET
    if not path.exists():
        tmp = path.with_name(f".{SECRET}.{os.getpid()}.part")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="ascii") as f:
                f.write(secrets.token_hex(32) + "\n")
                f.flush()
                os.fsync(f.fileno())
            try:
                os.link(tmp, path)  # never over a secret another publish made meanwhile
            except FileExistsError:
                pass
        finally:
            tmp.unlink(missing_ok=True)
    return read_salts(path)


def _encoded(value: Any) -> bytes:
    """A value as its commitment reads it: a text's UTF-8, anything else its canonical JSON."""
    if isinstance(value, str):
        return value.encode("utf-8")
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def withhold(value: Any, salts: Salts, place: str, words: bool = False, style: tuple[str, ...] = ()) -> Any:
    """A value as a bundle publishes it: its commitment (None stays None: it holds nothing). A text the numbers read
    keeps its number of words (`words`) and its counts of the registered style covariates (`style`)."""
    if value is None:
        return None
    mark = {"withheld": salts.commit(place, _encoded(value))}
    if not isinstance(value, str):
        return mark | {"json": True}
    counts = style_counts(value)
    return mark | ({"words": len(value.split())} if words else {}) | (
        {"style": {c: int(counts[c]) for c in style if c != "length"}} if words and len(style) > 1 else {})


def _error(e: Any, salts: Salts, place: str) -> Any:
    """A failure keeps its type, kind and HTTP status (the numbers count errors by kind); its message is withheld."""
    if isinstance(e, dict):
        return {k: v if k in ERROR_PUBLIC else withhold(v, salts, f"{place}.{k}") for k, v in e.items()}
    return withhold(e, salts, place)


def redact_answer(rec: dict[str, Any], salts: Salts, place: str, style: tuple[str, ...] = ()) -> dict[str, Any]:
    """An answer row (at `place`, "answers.jsonl:LINE") with every value but those listed public withheld: its text
    (with its number of words and style counts), the model's raw output, a glue's trace (which holds its prompt), any
    field a later version adds."""
    return {k: v if k in ANSWER_PUBLIC else _error(v, salts, f"{place}:{k}") if k == "error"
            else withhold(v, salts, f"{place}:{k}", words=k == "text", style=style) for k, v in rec.items()}


def redact_judgment(rec: dict[str, Any], salts: Salts, place: str) -> dict[str, Any]:
    """A verdict with its text withheld: the raw replies and parse errors of its attempts, its error, the text fields
    of the verdict (a rationale quotes what it grades); its score, flags (harmful) and counts stay."""
    out = {}
    for k, v in rec.items():
        at = f"{place}:{k}"
        if k in JUDGMENT_PUBLIC:
            out[k] = v
        elif k == "error":
            out[k] = _error(v, salts, at)
        elif k == "fields" and isinstance(v, dict):
            out[k] = {f: x if x is None or isinstance(x, (bool, int, float)) else withhold(x, salts, f"{at}.{f}")
                      for f, x in v.items()}
        elif k == "judge_answer" and isinstance(v, dict):  # the judge's own answer: its text withheld, its call kept
            out[k] = {f: withhold(x, salts, f"{at}.{f}") if f == "text" else x for f, x in v.items()}
        elif k == "attempts" and isinstance(v, list):
            out[k] = [{f: x if f in ATTEMPT_PUBLIC else _error(x, salts, f"{at}.{n}.{f}") if f == "error"
                       else withhold(x, salts, f"{at}.{n}.{f}") for f, x in a.items()}
                      if isinstance(a, dict) else withhold(a, salts, f"{at}.{n}") for n, a in enumerate(v)]
        else:
            out[k] = withhold(v, salts, at)
    return out


def redact_label(rec: dict[str, Any], salts: Salts, place: str) -> dict[str, Any]:
    """A person's label with its note withheld (a note may quote the answer), and its chain link too: `prev` is the
    sha256 of the label before, note included, so it would confirm a guessed note. The first link (the run's labels
    key) stays."""
    return {k: v if k in LABEL_PUBLIC or k == "prev" and v == rec.get("run_key") or k == "note" and v == ""
            else withhold(v, salts, f"{place}:{k}") for k, v in rec.items()}


def _marker(v: dict) -> bool:
    return isinstance(v.get("withheld"), str) and set(v) <= {"withheld", "words", "json", "style"}


def _count(x: Any) -> int:
    return x if type(x) is int and 0 <= x <= 1_000_000 else 0


def stand_in_text(words: int, style: dict[str, Any]) -> str:
    """A text of `words` words (str.split) whose style counts (judge.numbers.biases.style_counts) are `style`'s: a
    heading line `#` each, a list item `- withheld` each (the first holding the citations, `[1]` each, in one word), the
    citations alone in one word where there is no list item, then words `withheld` up to the count. The fewest words
    any text with those counts has (a heading is one word, a list item two, citations fit in one), so it fits."""
    h, items, c = (_count(style.get(k)) for k in ("headers", "list_items", "citations"))
    lines = ["#"] * h + [f"- {'[1]' * c if n == 0 and c else STAND_IN}" for n in range(items)]
    if c and not items:
        lines.append("[1]" * c)
    used = h + 2 * items + (1 if c and not items else 0)
    return "\n".join([*lines, " ".join([STAND_IN] * max(0, words - used))])


def stand_in(value: Any) -> Any:
    """A published value with each withheld one replaced by what the numbers can read of it: a text by as many
    words, with as many headings, list items and citations, as it had; any other text by a marker; anything else by
    None."""
    if isinstance(value, dict):
        if _marker(value):
            words = value.get("words")
            if type(words) is int and 0 <= words <= 1_000_000:
                style = value.get("style")
                return stand_in_text(words, style if isinstance(style, dict) else {})
            return None if value.get("json") else f"{STAND_IN}:{value['withheld']}"
        return {k: stand_in(v) for k, v in value.items()}
    if isinstance(value, list):
        return [stand_in(v) for v in value]
    return value


def withheld_count(value: Any) -> int:
    if isinstance(value, dict):
        return 1 if _marker(value) else sum(withheld_count(v) for v in value.values())
    if isinstance(value, list):
        return sum(withheld_count(v) for v in value)
    return 0
