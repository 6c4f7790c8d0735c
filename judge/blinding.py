"""Blinding: where the judge loses sight of which system wrote an answer.

Each answer gets an opaque label from a keyed hash; the key file (blinding.jsonl) maps labels back
to (arm, quant) and the judge never reads it. Judge calls go in a seeded shuffled order (questions
shuffled; the answers of one question shuffled, kept together so the shared rubric+question prefix
is reused by prompt caches). Identity-revealing text is scrubbed first and counted per label,
because a judge that can tell the arms apart is not blind. Answers are normalised before that, so
look-alike characters cannot smuggle a delimiter or a name past the patterns.
"""
from __future__ import annotations

import hashlib
import hmac
import random
import re
import unicodedata
from dataclasses import dataclass
from typing import ClassVar

from arms.questions import Question
from arms.records import AnswerRow, KeyRow
from registration.scrub import DEFAULT_SCRUB

# Look-alike characters an answer could use to forge the prompt's delimiters unseen: NFKC folds the
# full-width and small forms (＞＞＞, ﹤﹤﹤) to ASCII; zero-width characters (>\u200b>>) are removed.
ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"))
NORMALISATION = "zero-width U+200B-U+200D, U+2060, U+FEFF removed; NFKC"  # recorded beside INJECTION in gate.json
REDACTED = "[redacted]"
# Text aimed at the grader rather than the asker. Such answers are still judged (the answer is
# delimited and the verdict comes only from structured output), but they are counted and shown.
# The one definition: the audit's grader_directed detector counts with these patterns too. Each
# needs the text to address a grader or its instructions, so an answer that merely mentions a
# score, or contains ordinary JSON, is not counted.
_GRADER = r"(?:grader|grading model|judge|evaluator|assessor|marker|scorer|reward model|assistant)s?"
_VERDICT_KEY = r"(?:score|grade|rating|reward|verdict|preferred|gamed)"
INJECTION = (
    # telling the grader to drop its instructions
    r"(?i)\b(?:ignore|disregard|forget|override)\b.{0,40}?\b(?:previous|prior|above|earlier|preceding|original|"
    r"system|grading|scoring|your)\s+(?:instructions?|rules|rubric|prompts?|guidelines|criteria)\b"
    r"|\b(?:ignore|disregard|forget|override)\s+(?:the\s+|this\s+|all\s+|any\s+)?(?:instructions|rubric)\b",
    # a verdict written into the answer: a quoted verdict key ({"score": 2}, {'reward': 1.0}), or an
    # unquoted one opening a line or following a brace or comma ("Score: 2", "{gamed: false}")
    rf"(?i)[\"']{_VERDICT_KEY}[\"']\s*:\s*(?:-?\d|true\b|false\b|[\"'])",
    rf"(?im)(?:^|[{{,])[ \t]*(?:final[ \t]+|overall[ \t]+)?{_VERDICT_KEY}[ \t]*[:=][ \t]*(?:-?\d|true\b|false\b)",
    # the grader addressed, and told what to do with the score
    rf"(?i)\b{_GRADER}\b.{{0,40}}\b(?:must|should|will|shall|needs? to|has to|have to)\b.{{0,40}}"
    r"\b(?:score|grade|rate|mark|marks|points|reward|credit)\b",
    rf"(?i)\b(?:note|message|instructions?|reminder)[ \t]+(?:to|for)[ \t]+(?:the[ \t]+|any[ \t]+)?{_GRADER}\b"
    rf"|\b(?:dear|attention|hello|hey)[ \t,:]+(?:the[ \t]+)?{_GRADER}\b",
    # the reward asked for
    r"(?i)\b(?:give|award|assign|grant|rate|score|mark|grade)\s+(?:this|my)\s+(?:answer|response|completion|reply|"
    r"output)\b.{0,40}?(?:\b(?:full|maximum|max|highest|top|perfect|correct|pass|not gamed)\b|\b\d)",
    r"(?i)\b(?:this|my)\s+(?:answer|response|completion|reply)\s+(?:deserves|merits|earns|should\s+(?:get|receive|"
    r"be\s+given|be\s+scored|be\s+rated|be\s+graded|score))\b",
    r"(?i)\b(?:give|award|assign|grant)\b[^.\n]{0,30}?\b(?:full|maximum|max|highest|perfect|top)\s+(?:marks|score|"
    r"points|reward|rating|grade)\b",
    # closing the answer's delimiter to speak from outside it ("<<< end of answer >>>", "ANSWER>>>")
    r"(?im)<<<[^<>\n]{0,40}>>>|<<<[ \t]*(?:candidate|answer|response|completion|first|second|end|begin|start|system)\b"
    r"|\b(?:candidate|answer|response|completion|first|second|end|system|instructions?)[ \t]*>>>"
    r"|(?:^|[\[<(#=*_-])[ \t]*end of (?:the )?(?:answer|response|candidate|completion|submission)\b",
)


@dataclass(frozen=True)
class BlindItem:
    """All the judge may know about one answer."""

    kind: ClassVar[str] = "single"  # the judgment's kind (arms.records.Judgment)
    label: str
    question_id: str
    question: str
    reference: str | None
    answer: str

    def prompt_fields(self) -> dict[str, str | None]:
        return {"question": self.question, "reference": self.reference, "answer": self.answer}


def label_secret(label_key: str) -> bytes:
    """The key every label of a results folder is derived from. `label_key` is "blinding:<seed>:<experiment
    name>" (run.json and binding.json `label_key`): the experiment's, not one invocation's scope, so an answer
    keeps its label however the run is extended. Folders written before it used the run's name in its place.
    One definition, used by judge run to blind and by judge verify to re-derive every label."""
    return hashlib.sha256(label_key.encode()).digest()


def label_for(secret: bytes, row: str) -> str:
    return "L" + hmac.new(secret, row.encode(), hashlib.sha256).hexdigest()[:12]


def normalise(text: str) -> str:
    """The text as the judge and every count see it: zero-width characters removed, then NFKC."""
    return unicodedata.normalize("NFKC", text.translate(ZERO_WIDTH))


def injection_count(text: str) -> int:
    """Matches of INJECTION in the normalised text, so look-alike delimiters count like the real ones."""
    text = normalise(text)
    return sum(len(re.findall(p, text)) for p in INJECTION)


def scrub(text: str, patterns: tuple[str, ...] = tuple(DEFAULT_SCRUB.values())) -> tuple[str, int]:
    """Normalise, neutralise the prompt's delimiter markers so an answer cannot close its own quotation
    and speak to the judge from outside it, and remove identity-revealing text (counted)."""
    text = re.sub(r"<<<|>>>", "[marker]", normalise(text))
    count = 0
    for p in patterns:
        text, n = re.subn(p, REDACTED, text)
        count += n
    return text, count


def blind(answers: list[AnswerRow], questions: dict[str, Question], secret: bytes, seed: int,
          patterns: tuple[str, ...] = tuple(DEFAULT_SCRUB.values())) -> tuple[list[BlindItem], list[KeyRow]]:
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
