"""The demo's gold program (registered as [gold] program = "gold.py:score"): gold scores code can give without a person.

Called by judge.gold as score(question, reference, answer) for every answer, with the answer's text as the judge saw
it; it returns a score on the correctness rubric's scale (0, 1, 2). It decides every answer to the 18 questions it
covers, so the tags "arithmetic" and "out_of_scope" are complete strata of every demo run; it never returns 1 (code
can tell a computed number or a decline, not how partly right an answer is), and None only for the other questions.

* Arithmetic questions (tag "arithmetic", 10): each computes one number (EXPECTED, from its reference answer). The
  computed number appears in the answer: 2 (the rubric's "correct"); it does not: 0. Two readings of "appears":
  - Article citations ("Article 3.2", "[10.1]") are not numbers the answer states, so "Article 4.1" is not q10's 4.
  - An occurrence inside words copied from the question (three consecutive words of the question, the number among
    them) restates the question; it is not a result. This matters only where the computed number is also one the
    question states: q08 (34): "A member must pay 34 crowns" is 2, "A member's 40-crown deposit has 34 crowns
    deducted" (the question repeated) is 0. The program reads the number, not the working: an answer that reaches
    34 by nonsense, or states it beside other numbers, is still 2. That is this gold's known blind spot, and a person
    can label over it (`judge label`).
  q04 asks for a decision too ("No"): an answer that opens with the other one ("Yes") is 0 whatever number it states.
* Out-of-scope questions (tag "out_of_scope", 8): the rules do not cover them, and the rubric counts an answer that
  says so, inventing nothing, as correct. The answer declines (the rules or material do not cover it, contact the
  office, no information, I cannot answer): 2; it does not: 0. A "decline" that goes on to state a figure of its own
  (a number the question does not state, citations left out) answers anyway and is 0.
* Any other question: None (code cannot decide).
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

TOP, BOTTOM = 2, 0  # the correctness rubric's scale is 0, 1, 2

EXPECTED = {  # the number each arithmetic question computes, as its reference answer states it
    "q03": 90, "q04": 18, "q08": 34, "q10": 4, "q14": 32, "q19": 32, "q30": 5, "q33": 65, "q35": 25, "q39": 37,
}
DECISION = {"q04": "no"}  # questions whose answer is a decision as well as a number
COPIED = 3  # words in a row shared with the question that make a restatement

CITATION = re.compile(r"(?i)\barticles?\s+\d+(?:\.\d+)*(?:\s*(?:,|and|&|to)\s*\d+(?:\.\d+)*)*|\[\d+(?:\.\d+)*\]")
TOKEN = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?|[^\W\d_]+")
OPENS = re.compile(r"(?i)^\W*(?:the answer(?: to (?:this|the) question)? is\W*)?(yes|no)\b")
DECLINE = re.compile(
    r"(?i)\b(?:rules?|material|text|document|articles?|context|information)\b[^.;]{0,40}?"
    r"\b(?:do(?:es)?\s*n[o']t|not)\s+(?:cover|mention|say|include|address|contain|specify|state)"
    r"|\bnot\s+(?:covered|mentioned|addressed|included)\s+(?:by|in)\b"
    r"|\b(?:i|we)\s+(?:do\s*n[o']t|cannot|can[’']?t)\s+(?:know|find|say|answer|help)"
    r"|\bno\s+information\b|\bcontact\s+the\s+(?:scheme\s+)?office\b")


def number(token: str) -> Decimal | None:
    """A token's value when it is a number: "1,000" is 1000, "7.50" equals 7.5."""
    if not token[0].isdigit():
        return None
    try:
        return Decimal(token.replace(",", ""))
    except InvalidOperation:
        return None


def tokens(text: str) -> list[str]:
    """The words and numbers of a text, lower-cased, article citations left out."""
    return TOKEN.findall(CITATION.sub(" ", text).lower())


def stated(answer: str, question: str) -> list[Decimal]:
    """The numbers an answer states: citations left out, and each occurrence inside words copied from the question
    (COPIED consecutive words of the question, the number among them) left out as a restatement."""
    q = tokens(question)
    copied = {tuple(q[i:i + COPIED]) for i in range(len(q) - COPIED + 1)}
    a = tokens(answer)
    out = []
    for i, t in enumerate(a):
        value = number(t)
        if value is None:
            continue
        windows = (tuple(a[j:j + COPIED]) for j in range(max(0, i - COPIED + 1), i + 1) if j + COPIED <= len(a))
        if not any(w in copied for w in windows):
            out.append(value)
    return out


def opens_with(answer: str) -> str | None:
    """"yes" or "no" when the answer opens with one (after an optional "The answer is:")."""
    m = OPENS.match(answer)
    return m.group(1).lower() if m else None


def arithmetic(question_id: str, question: str, answer: str) -> int:
    decision = DECISION.get(question_id)
    said = opens_with(answer)
    if decision and said and said != decision:
        return BOTTOM
    return TOP if Decimal(EXPECTED[question_id]) in stated(answer, question) else BOTTOM


def out_of_scope(question: str, answer: str) -> int:
    given = {number(t) for t in tokens(question)} - {None}
    figures = [x for x in stated(answer, question) if x not in given]
    return TOP if DECLINE.search(answer) is not None and not figures else BOTTOM


def score(question, reference, answer: str) -> int | None:
    """Gold for one answer: `question` is the sealed question (registration.questions.Question), `reference` its
    reference answer, `answer` the answer's text as the judge saw it."""
    if "arithmetic" in question.tags:
        return arithmetic(question.id, question.question, answer)
    if "out_of_scope" in question.tags:
        return out_of_scope(question.question, answer)
    return None
