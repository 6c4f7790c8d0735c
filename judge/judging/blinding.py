"""Blinding: where the judge loses sight of which system wrote an answer.

Each answer gets an opaque label from a keyed hash whose key is the results folder's blinding secret (made when
the folder is bound, kept in it, never published: arms.folder); the key file (blinding.jsonl) maps labels back
to (arm, quant) and the judge never reads it. Judge calls go in a seeded shuffled order (questions
shuffled; the answers of one question shuffled, kept together so the shared rubric+question prefix
is reused by prompt caches). Identity-revealing text is scrubbed first and counted per label,
because a judge that can tell the arms apart is not blind. Answers are normalised before that, so
look-alike characters cannot smuggle a delimiter or a name past the patterns.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import random
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from core.records import AnswerRow, KeyRow
from registration.questions import Question
from registration.scrub import DEFAULT_SCRUB, compiled

# Look-alike delimiters. An answer must not be able to forge the prompt's `<<<`/`>>>` markers, nor hide from the
# grader-directed count (INJECTION) the delimiters its patterns rely on (`<`, `>`, `[`, `]`, `{`, `}`), with
# characters a reader takes for them. The class, decided by Unicode properties rather than listed by example:
# - invisible characters: category Cf (soft hyphen, zero-width and bidirectional controls, invisible operators,
#   tags) and the other default-ignorable code points (variation selectors, the combining grapheme joiner, the
#   Hangul fillers; DerivedCoreProperties.txt, Unicode 14);
# - combining marks (Mn, Me) sitting on a delimiter: `>` with U+0338 over it is still drawn as `>`;
# - characters drawn as one or more delimiters: their compatibility forms (NFKC: full-width, small, vertical),
#   characters that decompose to one with marks (NOT GREATER-THAN is `>` with U+0338), and DRAWN_AS below.
# Letters of other scripts that resemble them (Canadian syllabics PA and PO, runic KAUNA) are text, not in it.
DELIMITERS = "<>[]{}"
# The characters Unicode names as drawn like delimiters, each worth the delimiters it shows: the left/right angle
# brackets and angle quotation marks (guillemets; single, double, medium, heavy, mathematical, curved, with dot),
# the less-/greater-than signs drawn as runs (much, very much, double and triple nested, with dot), the arrowhead
# modifier letters, and the square and curly brackets (white, with quill, underbar, tick or stroke). Derived from
# the names of Unicode 14 (tests/test_scrub.py derives the set again from them); NFKC first folds the rest.
DRAWN_AS = {**dict.fromkeys("˂˱‹⋖❬❮❰⟨⦑⧼〈", "<"), **dict.fromkeys("˃˲›⋗❭❯❱⟩⦒⧽〉", ">"),
            **dict.fromkeys("«≪⟪⪡《", "<<"), **dict.fromkeys("»≫⟫⪢》", ">>"), "⋘": "<<<", "⫷": "<<<",
            "⋙": ">>>", "⫸": ">>>", **dict.fromkeys("⁅⟦⦋⦍⦏⹕⹗〚", "["), **dict.fromkeys("⁆⟧⦌⦎⦐⹖⹘〛", "]"),
            "❴": "{", "⦃": "{", "❵": "}", "⦄": "}"}
DEFAULT_IGNORABLE = ((0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160), (0x17B4, 0x17B5),
                     (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x206F), (0x3164, 0x3164),
                     (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3),
                     (0x1D173, 0x1D17A), (0xE0000, 0xE0FFF))
# Every line boundary str.splitlines knows: the count's `^` and `\n` see each as a new line.
LINE_BREAK = re.compile("\r\n|[\r\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")
# Removed before the judge reads an answer: the zero-width characters, and the tag characters, which mirror ASCII
# unseen (U+E0041 is an invisible "A"): a human reviewer cannot read them, a model may. The count also reads the
# ASCII they mirror as a text of its own (`hidden`), so what is hidden in them is counted.
UNSEEN = dict.fromkeys([*map(ord, "\u200b\u200c\u200d\u2060\ufeff"), *range(0xE0000, 0xE0080)])
TAG_ASCII = {cp: chr(cp - 0xE0000) for cp in range(0xE0020, 0xE007F)}
# recorded beside INJECTION in gate.json: a gate whose detectors read answers under another normalisation is stale
NORMALISATION = ("judge: zero-width U+200B-U+200D, U+2060, U+FEFF and tags U+E0000-U+E007F removed; NFKC; a run "
                 "of `<` or `>` look-alikes (with invisible characters and marks on them) drawn as three or more "
                 "folded to ASCII. count: also every Cf and default-ignorable character removed, marks on delimiters "
                 "removed, every delimiter look-alike folded to ASCII, every line boundary a newline; plus the ASCII "
                 "tags mirror, read on its own")
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

    kind: ClassVar[str] = "single"  # the judgment's kind (core.records.Judgment)
    label: str
    question_id: str
    question: str
    reference: str | None
    answer: str

    def prompt_fields(self) -> dict[str, str | None]:
        return {"question": self.question, "reference": self.reference, "answer": self.answer}


def label_secret(label_key: str) -> bytes:
    """The key labels were derived from in folders bound before blinding secrets (the legacy scheme): the sha256 of
    `label_key`, "blinding:<seed>:<experiment name>" (binding.json and run.json `label_key`; the run's name in its
    place in folders written before label keys). Both are in prereg.toml, so anyone holding the registration can
    derive those labels: such folders are not blind to a reader of their blind page, and verify says so."""
    return hashlib.sha256(label_key.encode()).digest()


def folder_label_secret(secret: bytes | None, label_key: str) -> bytes:
    """The key every label of a results folder derives from: its blinding secret (arms.folder.blinding_secret), or,
    in a folder bound before blinding secrets (None), its label key (`label_secret`). One definition, used by judge
    run to blind and by judge verify to re-derive every label."""
    return hashlib.sha256(b"blinding secret\x1f" + secret).digest() if secret is not None else label_secret(label_key)


def label_for(secret: bytes, row: str) -> str:
    return "L" + hmac.new(secret, row.encode(), hashlib.sha256).hexdigest()[:12]


@functools.cache
def invisible(c: str) -> bool:
    """Drawn as nothing: category Cf or a default-ignorable code point."""
    return unicodedata.category(c) == "Cf" or any(lo <= ord(c) <= hi for lo, hi in DEFAULT_IGNORABLE)


@functools.cache
def _mark(c: str) -> bool:
    return unicodedata.category(c) in ("Mn", "Me")


@functools.cache
def drawn_as(c: str) -> str:
    """The delimiters the character `c` is drawn as ("" for any other character)."""
    if c in DELIMITERS or c.isascii():
        return c if c in DELIMITERS else ""
    folded = unicodedata.normalize("NFKC", c)
    if folded in DRAWN_AS:
        return DRAWN_AS[folded]
    bare = "".join(x for x in unicodedata.normalize("NFKD", c) if not _mark(x))
    return bare if bare and all(x in DELIMITERS for x in bare) else ""


def _fold_runs(text: str) -> str:
    """Each run of `<` (or of `>`) look-alikes drawn as three or more, with the invisible characters and marks
    inside and on it, as that many ASCII `<` (or `>`); everything else as it is."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        side = drawn_as(text[i])[:1]
        if side not in ("<", ">"):
            out.append(text[i])
            i += 1
            continue
        j, weight = i, 0
        while j < n:
            drawn = drawn_as(text[j])
            if drawn and set(drawn) == {side}:
                weight += len(drawn)
            elif not (invisible(text[j]) or _mark(text[j])):
                break
            j += 1
        out.append(side * weight if weight >= 3 else text[i:j])
        i = j
    return "".join(out)


def normalise(text: str) -> str:
    """The text as the judge sees it: zero-width and tag characters removed, NFKC, and every look-alike of the
    `<<<`/`>>>` markers folded to them (so that `scrub` neutralises it); any other text as it was."""
    text = unicodedata.normalize("NFKC", text.translate(UNSEEN))
    return text if text.isascii() else _fold_runs(text)


def skeleton(text: str) -> str:
    """The text as the grader-directed count reads it: `normalise`, then every invisible character and every mark
    on a delimiter removed, every delimiter look-alike as its ASCII delimiters, every line boundary a newline."""
    text = LINE_BREAK.sub("\n", normalise(text))
    if text.isascii():
        return text
    out: list[str] = []
    on_delimiter = False
    for c in text:
        if invisible(c) or (on_delimiter and _mark(c)):
            continue
        drawn = drawn_as(c)
        out.append(drawn or c)
        on_delimiter = bool(drawn)
    return "".join(out)


def hidden(text: str) -> str:
    """The ASCII the text's tag characters mirror, read as a text of its own ("" when it has none)."""
    return "".join(TAG_ASCII.get(ord(c), "") for c in text) if not text.isascii() else ""


def counted_texts(text: str) -> tuple[str, ...]:
    """What the grader-directed count reads: the text's skeleton, and the skeleton of what tags hide in it."""
    return (skeleton(text), *((skeleton(h),) if (h := hidden(text)) else ()))


def injection_count(text: str) -> int:
    """Matches of INJECTION in what the count reads, so look-alike delimiters count like the real ones."""
    return sum(len(re.findall(p, t)) for t in counted_texts(text) for p in INJECTION)


def scrub(text: str, patterns: tuple[str, ...] = tuple(DEFAULT_SCRUB.values())) -> tuple[str, int]:
    """Normalise, neutralise the prompt's delimiter markers so an answer cannot close its own quotation
    and speak to the judge from outside it, and remove identity-revealing text (counted)."""
    text = re.sub(r"<<<|>>>", "[marker]", normalise(text))
    count = 0
    for p in patterns:
        text, n = compiled(p).subn(REDACTED, text)
        count += n
    return text, count


def blind(answers: list[AnswerRow], questions: dict[str, Question], secret: bytes, seed: int,
          patterns: tuple[str, ...] = tuple(DEFAULT_SCRUB.values()),
          labels: Mapping[str, str] | None = None) -> tuple[list[BlindItem], list[KeyRow]]:
    """Blinded items in judging order, and the key rows. Error rows have no answer to judge. `labels` (answer row ->
    label, as blinding.jsonl keys them) in place of deriving each from `secret`: the items judge run handed the judge,
    read back without the folder's secret (the review and blind pages, gold scores, a published bundle); a row it
    does not key is left out."""
    by_q: dict[str, list[BlindItem]] = {}
    keys: list[KeyRow] = []
    for a in answers:
        if a.status != "ok" or (labels is not None and a.row not in labels):
            continue
        label = labels[a.row] if labels is not None else label_for(secret, a.row)
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
