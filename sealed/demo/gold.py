"""The demo's gold program (registered as [gold] program = "gold.py:score"): gold scores code can give without a person.

Called by judge.gold as score(question, reference, answer) for every answer, with the answer's text as the judge saw
it; it returns a score on the correctness rubric's scale (0, 1, 2). It decides every answer to every one of the 40
questions (never None), so every tag of the demo ("in_context", "arithmetic", "out_of_scope", "advice") is a complete
stratum of every demo run. It reads what an answer states, not how it reasons: a number, a decline, a decision, a key
phrase. An answer that states the right facts beside wrong ones, or reaches them by nonsense, is scored on the facts;
that is this gold's known blind spot, and a person can label over any answer (`judge label`).

* Arithmetic questions (tag "arithmetic", 10): each computes one number (EXPECTED, from its reference answer). The
  computed number appears in the answer: 2 (the rubric's "correct"); it does not: 0. Two readings of "appears":
  - Article citations ("Article 3.2", "[10.1]") are not numbers the answer states, so "Article 4.1" is not q10's 4.
  - An occurrence inside words copied from the question (three consecutive words of the question, the number among
    them) restates the question; it is not a result. This matters only where the computed number is also one the
    question states: q08 (34): "A member must pay 34 crowns" is 2, "A member's 40-crown deposit has 34 crowns
    deducted" (the question repeated) is 0. The program reads the number, not the working: an answer that reaches
    34 by nonsense, or states it beside other numbers, is still 2.
  q04 asks for a decision too ("No"): an answer that opens with the other one ("Yes") is 0 whatever number it states.
* Out-of-scope questions (tag "out_of_scope", 8): the rules do not cover them, and the rubric counts an answer that
  says so, inventing nothing, as correct. The answer declines (the rules or material do not cover it, contact the
  office, no information, I cannot answer): 2; it does not: 0. A "decline" that goes on to state a figure of its own
  (a number the question does not state, citations left out) answers anyway and is 0.
* The other questions (tag "in_context" only, 22): KEY_FACTS lists the key facts each one's reference answer states,
  and the answer is scored by how many it states: all 2 (correct), some 1 (the rubric's "correct but missing a key
  point"), none 0. A fact is stated when one of its forms appears:
  - a number (citations left out, the question's words repeated left out, as for arithmetic), followed within two
    words by one of its units where it has units ("72 hours" or "3 days" for q07, not "72 days"); where the question
    names the unit ("how many minutes") or the number is an amount of crowns, a count or an age, the number alone.
    Numbers written as words ("two") are not read: such an answer is 0 or 1 where a person would give more.
  - a phrase ("standard" bicycle, "Day Pass", "parent or guardian" for q22), none of them a word of the question.
  - the decision "No" of a yes/no question (DECISION): the answer opens with "No" (or says "The answer: No"), or
    negates one of the question's own verbs (no, not, never, cannot or n't followed within two words by one: "can't
    hire", "is not collected"; "can't even imagine" is no decision). It reads the negation of a verb, not what the
    sentence means: "No, a 30-year-old cannot wear a helmet" states q25's decision.
  An answer that opens with the wrong decision ("Yes" where the reference says "No"; "No" to q22, whose reference
  is a conditional yes) is 0, whatever facts it states.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

TOP, BOTTOM = 2, 0  # the correctness rubric's scale is 0, 1, 2

EXPECTED = {  # the number each arithmetic question computes, as its reference answer states it
    "q03": 90, "q04": 18, "q08": 34, "q10": 4, "q14": 32, "q19": 32, "q30": 5, "q33": 65, "q35": 25, "q39": 37,
}
COPIED = 3  # words in a row shared with the question that make a restatement


def amount(value: int, *units: str) -> tuple:
    """A number as a form of a fact; with `units`, one of them must follow it within two words."""
    return ("amount", Decimal(value), units)


def phrase(pattern: str) -> tuple:
    """Words as a form of a fact (a regular expression, case ignored)."""
    return ("phrase", re.compile(pattern, re.IGNORECASE))


def says_no(*verbs: str) -> tuple:
    """The decision "No" as a form of a fact: the answer opens with "No" (or says "the answer: no"), or negates one
    of the question's `verbs` (word beginnings): a negation followed within two words by one ("can't hire", "is not
    collected")."""
    words = "|".join(verbs)
    return ("no", re.compile(rf"(?i)\banswer\b\W*(?:is\W*)?no\b"
                             rf"|(?:\b(?:no|not|never|cannot)\b|n[’']t\b)\W+(?:\w+\W+){{0,2}}?\b(?:{words})"))


HOURS, DAYS = ("hour", "hours", "hr", "hrs", "h"), ("day", "days")

# The key facts each in_context question's reference answer states; a fact is a tuple of the forms that state it.
# Where the reference says more than the question asks, the comment says which facts are essential and why.
KEY_FACTS = {
    "q01": ((amount(180),),),  # the fee, 180 crowns (paid in one payment: how, not how much)
    # the decision; the reason (no Day Pass concession price) is the decision restated
    "q02": ((says_no("buy", "get", "purchase", "cheaper", "concession", "discount"),),),
    "q06": ((amount(40),),),  # the deposit, 40 crowns (refundable, paid at registration: how, not what)
    # held "until 72 hours after the pass expires": the 72 hours, and that they run from the pass's expiry (not
    # from buying it): without it the hold's end is unknown, so "72 hours" alone is partly correct
    "q07": ((amount(72, *HOURS), amount(3, *DAYS)), (phrase(r"\bexpir|\b(?:pass|it)\s+(?:ends|has\s+ended)"),)),
    "q09": ((amount(2),),),  # at most 2 (the question names the bicycles)
    # the decision; the closed hours 01:00-05:00 are its reason
    "q11": ((says_no("take", "release", "hire", "rent", "use", "get", "borrow"),),),
    "q13": ((amount(48, *HOURS), amount(2, *DAYS)),),  # 48 hours (after release: the clock the question implies)
    # "suspended for 30 days": what happens (a suspension) and for how long; either alone is partly correct
    "q15": ((phrase(r"\bsuspen(?:d|ds|ded|sion)\b"),), (amount(30, *DAYS),)),
    # 75 crowns; the 24-hour police reference is what "reported properly" (granted by the question) means
    "q16": ((amount(75),),),
    "q18": ((amount(10),),),  # within 10 minutes (the question names the minutes); how to report is an aside
    # the cap, 250 crowns per hire; the 5-crown administration fee is another article's addition to the invoice
    "q20": ((amount(250),),),
    "q21": ((amount(16),),),  # 16 years
    # a conditional yes with three conditions, each essential: a standard bicycle (not an e-bike), on a Day Pass,
    # bought by a parent or guardian (aged 18 or over, who answers for the charges)
    "q22": ((phrase(r"\bstandard\b"),), (phrase(r"\bday[- ]?pass"),), (phrase(r"\b(?:parent|guardian)"),)),
    "q23": ((says_no("hire", "rent", "use", "ride"),),),  # the decision; the reason is the e-bike age of 18
    # the decision; the helmet is mandatory for adults only on an e-bike
    "q25": ((says_no("wear", "need", "have to", "require", "mandatory", "compulsory", "oblig"),),),
    "q26": ((amount(22),),),  # 22 crowns
    # the decision (advice); its reason is the basket's 5-kilogram limit
    "q27": ((says_no("put", "place", "carry", "recommend", "advis", "allow", "permit", "fit"),),),
    "q29": ((amount(4, *HOURS),),),  # 4 hours (the late fee after it is another article's)
    # the charge, 200 crowns (the question asks for the charge; the membership's end is a further consequence)
    "q31": ((amount(200),),),
    # the decision; a Day Pass is refunded only before any bicycle is released with it
    "q34": ((says_no("get", "refund", "receive", "entitle", "eligible", "claim"),),),
    # two deadlines, both the answer to "how quickly": acknowledged within 3 working days, answered within 20
    "q37": ((amount(3, *DAYS),), (amount(20, *DAYS),)),
    "q38": ((says_no("collect", "taken", "paid", "pay"),),),  # the decision; the reference only restates it
}
DECISION = {  # questions whose answer is a decision; an answer opening with the other one is 0
    "q04": "no", "q02": "no", "q11": "no", "q23": "no", "q25": "no", "q27": "no", "q34": "no", "q38": "no",
    "q22": "yes",  # "Only a standard bicycle, on a Day Pass ...": a conditional yes, so an answer opening "No" is 0
}

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


def statements(answer: str, question: str) -> list[tuple[Decimal, tuple[str, ...]]]:
    """The numbers an answer states, each with the two words after it (its unit, if any): citations left out, and
    each occurrence inside words copied from the question (COPIED consecutive words of the question, the number
    among them) left out as a restatement."""
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
            out.append((value, tuple(a[i + 1:i + 3])))
    return out


def stated(answer: str, question: str) -> list[Decimal]:
    """The numbers an answer states (`statements`, without the words after them)."""
    return [value for value, _ in statements(answer, question)]


def opens_with(answer: str) -> str | None:
    """"yes" or "no" when the answer opens with one (after an optional "The answer is:")."""
    m = OPENS.match(answer)
    return m.group(1).lower() if m else None


def wrong_decision(question_id: str, answer: str) -> bool:
    """The question asks for a decision (DECISION) and the answer opens with the other one."""
    decision, said = DECISION.get(question_id), opens_with(answer)
    return bool(decision and said and said != decision)


def arithmetic(question_id: str, question: str, answer: str) -> int:
    if wrong_decision(question_id, answer):
        return BOTTOM
    return TOP if Decimal(EXPECTED[question_id]) in stated(answer, question) else BOTTOM


def out_of_scope(question: str, answer: str) -> int:
    given = {number(t) for t in tokens(question)} - {None}
    figures = [x for x in stated(answer, question) if x not in given]
    return TOP if DECLINE.search(answer) is not None and not figures else BOTTOM


def states(form: tuple, answer: str, question: str) -> bool:
    """Whether the answer states one form of a fact (KEY_FACTS)."""
    if form[0] == "no" and opens_with(answer) == "no":
        return True
    if form[0] in ("no", "phrase"):
        return form[1].search(CITATION.sub(" ", answer)) is not None
    _, value, units = form
    return any(v == value and (not units or set(after) & set(units)) for v, after in statements(answer, question))


def key_facts(question_id: str, question: str, answer: str) -> int:
    if wrong_decision(question_id, answer):
        return BOTTOM
    facts = KEY_FACTS[question_id]
    n = sum(any(states(form, answer, question) for form in fact) for fact in facts)
    return TOP if n == len(facts) else 1 if n else BOTTOM


def score(question, reference, answer: str) -> int:
    """Gold for one answer: `question` is the sealed question (registration.questions.Question), `reference` its
    reference answer, `answer` the answer's text as the judge saw it."""
    if "arithmetic" in question.tags:
        return arithmetic(question.id, question.question, answer)
    if "out_of_scope" in question.tags:
        return out_of_scope(question.question, answer)
    return key_facts(question.id, question.question, answer)
