"""The demo's gold program (registered as [gold] program = "gold.py:score"): gold scores code can give without a person.

Called by judge.gold as score(question, reference, answer) for every answer, with the answer's text as the judge saw
it; it returns a score on the correctness rubric's scale (0, 1, 2), or None where code cannot decide. It never
returns 1: code can tell a computed number or a decline, not how partly right an answer is.

* Arithmetic questions (tag "arithmetic", 10): each computes one number (EXPECTED, from its reference answer). The
  numbers an answer states are read, leaving out article citations ("Article 3.2", "[10.1]") and the numbers the
  question itself states (restating them is not a result). The expected number among the rest: 2 (the rubric's
  "correct": the number is what the question asks for). Other numbers but not it: 0 (a wrong result). None left:
  None (no result stated, or only the question's own numbers, which code cannot tell from a restatement). So for
  q08, whose result (34) is also a number its question states, code can show an answer wrong but never right. q04
  asks for a decision too ("No"): an answer that opens with the other one ("Yes") is 0.
* Out-of-scope questions (tag "out_of_scope", 8): the rules do not cover them, and the rubric counts an answer that
  says so, inventing nothing, as correct. An answer that declines (the rules or material do not cover it, contact the
  office, no information) and claims nothing: 2. One that claims something (opens with yes or no, or states a number
  the question does not): 0. Both, or neither: None.
* Any other question: None.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

TOP, BOTTOM = 2, 0  # the correctness rubric's scale is 0, 1, 2

EXPECTED = {  # the number each arithmetic question computes, as its reference answer states it
    "q03": 90, "q04": 18, "q08": 34, "q10": 4, "q14": 32, "q19": 32, "q30": 5, "q33": 65, "q35": 25, "q39": 37,
}
DECISION = {"q04": "no"}  # questions whose answer is a decision as well as a number

CITATION = re.compile(r"(?i)\barticles?\s+\d+(?:\.\d+)*(?:\s*(?:,|and|&|to)\s*\d+(?:\.\d+)*)*|\[\d+(?:\.\d+)*\]")
NUMBER = re.compile(r"(?<![\w.])\d+(?:,\d{3})*(?:\.\d+)?")
OPENS = re.compile(r"(?i)^\W*(?:the answer(?: to (?:this|the) question)? is\W*)?(yes|no)\b")
DECLINE = re.compile(
    r"(?i)\b(?:rules?|material|text|document|articles?|context|information)\b[^.;]{0,40}?"
    r"\b(?:do(?:es)?\s*n[o']t|not)\s+(?:cover|mention|say|include|address|contain|specify|state)"
    r"|\bnot\s+(?:covered|mentioned|addressed|included)\s+(?:by|in)\b"
    r"|\b(?:i|we)\s+(?:do\s*n[o']t|cannot|can[’']?t)\s+(?:know|find|say|answer|help)"
    r"|\bno\s+information\b|\bcontact\s+the\s+(?:scheme\s+)?office\b")


def numbers(text: str) -> list[Decimal]:
    """The numbers a text states, citations left out: "1,000" is 1000, "7.50" equals 7.5."""
    out = []
    for m in NUMBER.finditer(CITATION.sub(" ", text)):
        try:
            out.append(Decimal(m.group(0).replace(",", "")))
        except InvalidOperation:
            continue
    return out


def opens_with(answer: str) -> str | None:
    """"yes" or "no" when the answer opens with one (after an optional "The answer is:")."""
    m = OPENS.match(answer)
    return m.group(1).lower() if m else None


def arithmetic(question_id: str, question: str, answer: str) -> int | None:
    decision = DECISION.get(question_id)
    said = opens_with(answer)
    if decision and said and said != decision:
        return BOTTOM
    given = set(numbers(question))
    stated = [x for x in numbers(answer) if x not in given]
    if Decimal(EXPECTED[question_id]) in stated:
        return TOP
    return BOTTOM if stated else None


def out_of_scope(question: str, answer: str) -> int | None:
    declines = DECLINE.search(answer) is not None
    given = set(numbers(question))
    claims = opens_with(answer) is not None or any(x not in given for x in numbers(answer))
    if declines and not claims:
        return TOP
    if claims and not declines:
        return BOTTOM
    return None


def score(question, reference, answer: str) -> int | None:
    """Gold for one answer: `question` is the sealed question (arms.questions.Question), `reference` its reference
    answer, `answer` the answer's text as the judge saw it."""
    if "arithmetic" in question.tags:
        return arithmetic(question.id, question.question, answer)
    if "out_of_scope" in question.tags:
        return out_of_scope(question.question, answer)
    return None
