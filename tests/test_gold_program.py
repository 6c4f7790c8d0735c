"""The demo's gold program (sealed/demo/gold.py, registered as [gold] program): hand-written answers, each scored by
hand from the correctness rubric (0 wrong, 2 correct) and the program's documented rules, never from the program."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.gold import load_program
from registration.prereg import load_experiment
from registration.questions import load_questions

from conftest import ROOT

pytestmark = pytest.mark.unit

DEMO = load_experiment(ROOT / "sealed" / "demo")
QUESTIONS = {q.id: q for q in load_questions(DEMO.set_paths())}
SCORE = load_program(DEMO)  # imported from its sealed source, as judge run and the analysis import it
# the number each arithmetic question computes, read by hand from its reference in sets/exam.jsonl
EXPECTED = {"q03": 90, "q04": 18, "q08": 34, "q10": 4, "q14": 32, "q19": 32, "q30": 5, "q33": 65, "q35": 25,
            "q39": 37}
OUT_OF_SCOPE = ("q05", "q12", "q17", "q24", "q28", "q32", "q36", "q40")


def score(qid: str, answer: str):
    q = QUESTIONS[qid]
    return SCORE(q, q.reference, answer)


def test_the_demo_registers_the_program_and_its_strata_are_the_ones_it_scores():
    assert DEMO.gold.program == "gold.py:score" and DEMO.gold.labels == ()
    assert {q for q, x in QUESTIONS.items() if "arithmetic" in x.tags} == set(EXPECTED)
    assert {q for q, x in QUESTIONS.items() if "out_of_scope" in x.tags} == set(OUT_OF_SCOPE)


@pytest.mark.parametrize("qid, answer, want", [
    # the computed number appears: correct
    ("q03", "A Concession Card holder pays 90 alder crowns for an Annual membership. (Article 1.5)", 2),
    ("q33", "5 x 15 = 75 crowns, minus the 10-crown fee: 65 crowns are refunded (Articles 9.3 and 9.4).", 2),
    ("q35", "The refund is 25.00 alder crowns.", 2),
    ("q10", "The usage charge is 4 alder crowns.", 2),
    ("q04", "No: three passes cost 18 crowns, less than the Monthly fee.", 2),
    ("q08", "A member must pay 34 crowns before the next hire.", 2),  # the question's number, in the answer's words
    ("q08", "They must pay 34.", 2),
    # it does not: wrong, whatever else the answer says
    ("q03", "A Concession Card holder pays 20 alder crowns instead of 40 alder crowns. (Article 1.5)", 0),
    ("q14", "The late fee is 650 alder crowns. (Article 4.4)", 0),
    ("q33", "9.4. (Article 9.3)", 0),
    ("q39", "The member receives 32 * 10 = 320 crowns.", 0),
    ("q39", "The member gets back 32 crowns.", 0),
    ("q08", "They must pay 6 crowns before the next hire.", 0),
    ("q04", "Yes, the Monthly membership at 18 crowns is cheaper.", 0),  # the decision is wrong, whatever the number
    ("q04", "No, buy Day Passes instead.", 0),
    ("q10", "The usage charge applies to a 100-minute hire. (Article 3.3)", 0),
    ("q10", "See Article 4.1 and Article 4.2.", 0),  # a citation's number is not the answer's 4
    ("q30", "The surcharge is set by [5.1].", 0),
    ("q19", "The invoice is a red light.", 0),
    ("q03", "Article 1.4 and Article 1.5 say so.", 0),
    ("q03", "", 0),
    # the question's words repeated are no result, even where its number is the computed one
    ("q08", "A member's 40-crown deposit has 34 crowns deducted before the next hire.", 0),
    ("q08", "Question: A member's 40-crown deposit has 34 crowns deducted. How much must they pay? (Article 2.6)", 0),
])
def test_arithmetic_answers(qid, answer, want):
    assert score(qid, answer) == want


@pytest.mark.parametrize("qid, answer, want", [
    ("q28", "The material does not cover this question; please contact the scheme office.", 2),
    ("q05", "The Scheme Rules don't mention car parking. Please contact the Scheme office.", 2),
    ("q40", "I cannot answer that from the rules: there is no information about new docks.", 2),
    ("q17", "No, the Scheme Rules do not cover private insurance; please check with your insurer.", 2),
    ("q32", "The speed limit on Harbour Road is 60mph.", 0),
    ("q17", "No, your home insurance does not cover you while riding.", 0),  # a claim, not a decline of the rules
    ("q17", "Yes, your home insurance covers you. (Article 7.7)", 0),
    ("q12", "The first bus leaves Old Harbour on Sundays at 10:10pm. (Article 3.7)", 0),
    ("q36", "The answer is: 650 alder crowns. (Article 4.4)", 0),
    ("q28", "The answer to this question is: No, private bicycles cannot be taken on trams.", 0),
    ("q32", "The rules do not cover car speed limits, but it is 30 mph.", 0),  # declines, then answers anyway
    ("q40", "The scheme will open new docks in the Northgate district.", 0),
    ("q24", "Suing a city can be a complex and personal matter.", 0),
    ("q24", "", 0),
])
def test_out_of_scope_answers(qid, answer, want):
    assert score(qid, answer) == want


@pytest.mark.parametrize("qid", ["q01", "q02", "q09", "q21", "q38"])
def test_other_questions_have_no_programmatic_gold(qid):
    assert "arithmetic" not in QUESTIONS[qid].tags and "out_of_scope" not in QUESTIONS[qid].tags
    assert score(qid, QUESTIONS[qid].reference) is None and score(qid, "42") is None


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(EXPECTED) + list(OUT_OF_SCOPE)), st.text(max_size=200))
def test_every_answer_to_the_two_strata_is_decided(qid, answer):
    """Any text at all gets 0 or 2: the tags are complete strata of every run, never left undecided."""
    assert score(qid, answer) in (0, 2)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(sorted(EXPECTED)), st.integers(0, 10_000), st.integers(1, 12), st.integers(1, 9))
def test_an_arithmetic_answer_is_right_exactly_when_it_states_the_computed_number(qid, n, art, sub):
    """Any stated amount: the computed one is 2, any other 0; a citation's number is none; the question repeated
    states nothing, whatever numbers it holds. q04 also needs no "Yes"; the templates open with neither."""
    want = 2 if n == EXPECTED[qid] else 0
    assert score(qid, f"The amount is {n} alder crowns (Article {art}.{sub}).") == want
    assert score(qid, f"See Article {art}.{sub}.") == 0
    question = QUESTIONS[qid].question
    assert score(qid, question) == 0
    assert score(qid, f"{question} The answer is {n}.") == want


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(OUT_OF_SCOPE), st.integers(0, 10_000))
def test_an_out_of_scope_answer_is_right_exactly_when_it_declines_and_states_no_figure(qid, n):
    assert not re.search(r"\d", QUESTIONS[qid].question)  # so every n is a figure of the answer's own
    assert score(qid, f"It is {n} crowns.") == 0
    assert score(qid, "The Scheme Rules do not cover this. Please contact the Scheme office.") == 2
    assert score(qid, f"The Scheme Rules do not cover this, but it is {n} crowns.") == 0
