"""Blinding: where the judge loses sight of which system wrote an answer.

Each answer gets an opaque label from a keyed hash; the key file (blinding.jsonl) maps labels back
to (arm, quant) and the judge never reads it. Judge calls go in a seeded shuffled order (questions
shuffled; the answers of one question shuffled, kept together so the shared rubric+question prefix
is reused by prompt caches). Identity-revealing text is scrubbed first and counted per label,
because a judge that can tell the arms apart is not blind.
"""
from __future__ import annotations

import hashlib
import hmac
import random
import re
from dataclasses import asdict, dataclass

from arms.questions import Question
from arms.records import AnswerRow

DEFAULT_SCRUB = (
    r"(?s)<think>.*?</think>",
    r"(?i)\b(smol ?lm\d*|qwen\d*(\.\d+)?|llama[- ]?\d*|gpt-?\d[\w.-]*|claude|gemma\d*|mistral|phi-?\d)\b",
    r"(?i)\b(hugging ?face|openai|anthropic|alibaba|meta ai)\b",
    r"(?i)\bas an ai (language )?model\b",
)
REDACTED = "[redacted]"
# Text aimed at the grader rather than the asker. Such answers are still judged (the answer is
# delimited and the verdict comes only from structured output), but they are counted and shown.
INJECTION = (
    r"(?i)\b(ignore|disregard|forget)\b.{0,40}\b(instructions?|rules|rubric|prompt)\b",
    r"(?i)[\"']?\b(score|preferred|gamed)\b[\"']?\s*[:=]\s*(\d|true|false)",
    r"(?i)\b(grader|judge|evaluator|assistant)\b.{0,40}\b(must|should|will)\b.{0,40}\b(score|grade|rate|mark)\b",
    r"(?i)CANDIDATE>>>|<<<CANDIDATE|ANSWER>>>|<<<ANSWER",
)


@dataclass(frozen=True)
class BlindItem:
    """All the judge may know about one answer."""

    label: str
    question_id: str
    question: str
    reference: str | None
    answer: str

    def prompt_fields(self) -> dict[str, str | None]:
        return {"question": self.question, "reference": self.reference, "answer": self.answer}


@dataclass(frozen=True)
class KeyRow:
    """One line of blinding.jsonl: label -> system. Only analysis reads it."""

    label: str
    row: str
    arm: str
    quant: str
    question_id: str
    sample: int
    scrubbed: int  # identity-revealing matches removed from this answer
    injection: int = 0  # grader-directed text found in this answer (counted, shown, never obeyed)

    def to_dict(self) -> dict:
        return {"type": "blinding", **asdict(self)}


def label_for(secret: bytes, row: str) -> str:
    return "L" + hmac.new(secret, row.encode(), hashlib.sha256).hexdigest()[:12]


def injection_count(text: str) -> int:
    return sum(len(re.findall(p, text)) for p in INJECTION)


def scrub(text: str, patterns: tuple[str, ...] = DEFAULT_SCRUB) -> tuple[str, int]:
    """Remove identity-revealing text (counted), and the prompt's delimiter markers so an answer cannot
    close its own quotation and speak to the judge from outside it."""
    text = re.sub(r"<<<|>>>", "[marker]", text)
    count = 0
    for p in patterns:
        text, n = re.subn(p, REDACTED, text)
        count += n
    return text, count


def blind(answers: list[AnswerRow], questions: dict[str, Question], secret: bytes, seed: int,
          patterns: tuple[str, ...] = DEFAULT_SCRUB) -> tuple[list[BlindItem], list[KeyRow]]:
    """Blinded items in judging order, and the key rows. Error rows have no answer to judge."""
    by_q: dict[str, list[BlindItem]] = {}
    keys: list[KeyRow] = []
    for a in answers:
        if a.status != "ok":
            continue
        label = label_for(secret, a.row)
        text, n = scrub(a.text or "", patterns)
        q = questions[a.question_id]
        by_q.setdefault(a.question_id, []).append(BlindItem(label, q.id, q.question, q.reference, text))
        keys.append(KeyRow(label, a.row, a.arm, a.quant, a.question_id, a.sample, n, injection_count(a.text or "")))
    rng = random.Random(seed)
    order = sorted(by_q)
    rng.shuffle(order)
    items: list[BlindItem] = []
    for qid in order:
        group = sorted(by_q[qid], key=lambda i: i.label)
        rng.shuffle(group)
        items.extend(group)
    return items, sorted(keys, key=lambda k: k.label)
