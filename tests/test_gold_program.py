"""The demo's gold program (sealed/demo/gold.py, registered as [gold] program): hand-written answers, each scored by
hand from the correctness rubric (0 wrong, 1 partly, 2 correct) and the program's documented rules, never from the
program; and the reference answers themselves, correct by definition."""
from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judge.gold.program import load_program
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
# the other 22, tagged in_context only: the key-fact grader's questions
KEY_FACT = ("q01", "q02", "q06", "q07", "q09", "q11", "q13", "q15", "q16", "q18", "q20", "q21", "q22", "q23", "q25",
            "q26", "q27", "q29", "q31", "q34", "q37", "q38")
# the yes/no questions whose reference answer opens "No."
SAYS_NO = ("q02", "q11", "q23", "q25", "q27", "q34", "q38")


def score(qid: str, answer: str):
    q = QUESTIONS[qid]
    return SCORE(q, q.reference, answer)


def test_the_demo_registers_the_program_and_its_strata_are_the_ones_it_scores():
    assert DEMO.gold.value("program") == "gold.py:score" and DEMO.gold.value("labels") == ()
    assert {q for q, x in QUESTIONS.items() if "arithmetic" in x.tags} == set(EXPECTED)
    assert {q for q, x in QUESTIONS.items() if "out_of_scope" in x.tags} == set(OUT_OF_SCOPE)
    assert {q for q, x in QUESTIONS.items() if not {"arithmetic", "out_of_scope"} & set(x.tags)} == set(KEY_FACT)
    assert all("in_context" in QUESTIONS[q].tags for q in KEY_FACT) and len(QUESTIONS) == 40
    assert {q for q in KEY_FACT if QUESTIONS[q].reference.startswith("No.")} == set(SAYS_NO)


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


@pytest.mark.parametrize("qid, answer, want", [
    # q01 the fee, 180
    ("q01", "An Annual membership costs 180 alder crowns, paid at registration.", 2),
    ("q01", "It costs 18 alder crowns.", 0),
    ("q01", "See Article 180.", 0),  # a citation's number is not the fee
    # q02 "No"
    ("q02", "No, the concession does not apply to a Day Pass.", 2),
    ("q02", "A Concession Card holder cannot buy a cheaper Day Pass.", 2),
    ("q02", "Card holders get no discount on a Day Pass.", 2),
    ("q02", "A Concession Card holder can buy a Day Pass at half price.", 0),
    # q06 the deposit, 40
    ("q06", "A refundable security deposit of 40 alder crowns.", 2),
    ("q06", "The deposit is 20 alder crowns.", 0),
    # q07 72 hours (or 3 days), and after the pass expires
    ("q07", "It is held until 72 hours after the pass expires.", 2),
    ("q07", "It is released 3 days after the Day Pass has expired.", 2),
    ("q07", "The deposit is held for 72 hours.", 1),
    ("q07", "It is released when the pass expires.", 1),
    ("q07", "It is held for 72 days after the pass expires.", 1),  # 72 of another unit is not the fact
    ("q07", "It is held for 24 hours.", 0),
    # q09 at most 2
    ("q09", "At most 2 bicycles at once.", 2),
    ("q09", "Up to 3 bicycles.", 0),
    ("q09", "At most two.", 0),  # a number written as a word is not read: the documented blind spot
    # q11 "No"
    ("q11", "No: Old Harbour docks do not release bicycles between 01:00 and 05:00.", 2),
    ("q11", "You cannot take a bicycle from an Old Harbour dock at that hour.", 2),
    ("q11", "Old Harbour docks release bicycles at any hour.", 0),
    # q13 48 hours (or 2 days)
    ("q13", "After 48 hours.", 2),
    ("q13", "It is treated as lost 2 days after release.", 2),
    ("q13", "After 24 hours.", 0),
    ("q13", "After 48 days.", 0),
    # q15 suspended, for 30 days
    ("q15", "The member is suspended for 30 days.", 2),
    ("q15", "A 30-day suspension.", 2),
    ("q15", "The member is suspended.", 1),
    ("q15", "A 30-day ban.", 1),
    ("q15", "The member pays a 30 crown fine.", 0),  # 30, but not days
    # q16 75
    ("q16", "A fixed charge of 75 alder crowns instead of the replacement cost.", 2),
    ("q16", "The full replacement cost of the bicycle.", 0),
    # q18 10 (minutes, named by the question)
    ("q18", "Within 10 minutes of release, at the dock screen.", 2),
    ("q18", "Within 15 minutes.", 0),
    # q20 the cap, 250
    ("q20", "Up to 250 alder crowns per hire, plus the 5-crown administration fee.", 2),
    ("q20", "The cap is 50 percent.", 0),
    # q21 16
    ("q21", "16 years old.", 2),
    ("q21", "The minimum age is 18 years.", 0),
    # q22 a conditional yes: a standard bicycle, a Day Pass, a parent or guardian
    ("q22", "Yes, but only a standard bicycle, on a Day Pass bought by a parent or guardian aged 18 or over.", 2),
    ("q22", "Only on a Day Pass bought by a parent.", 1),
    ("q22", "Only a standard bicycle.", 1),
    ("q22", "A 15-year-old can hire an e-bike.", 0),
    # q23 "No"
    ("q23", "No. E-bikes are for riders aged 18 or over.", 2),
    ("q23", "A 17-year-old can't hire an e-bike.", 2),
    ("q23", "A 17-year-old can't even imagine it.", 0),  # a negation of no verb of the question
    # q25 "No"
    ("q25", "No, a helmet is advised but not mandatory on a standard bicycle.", 2),
    ("q25", "A helmet is not required on a standard bicycle, only on an e-bike.", 2),
    ("q25", "A helmet must be worn.", 0),
    # q26 22
    ("q26", "22 alder crowns.", 2),
    ("q26", "A helmet not returned within 24 hours costs 22 crowns.", 2),
    ("q26", "24 alder crowns.", 0),
    # q27 "No"
    ("q27", "No: the front basket carries at most 5 kilograms.", 2),
    ("q27", "It is not recommended to put it in the front basket.", 2),
    ("q27", "It's not a bad idea to put it in the front basket.", 0),  # the negation is of no verb of the question
    ("q27", "Put it in the front basket.", 0),
    # q29 4 hours
    ("q29", "4 hours; after that the late fee applies.", 2),
    ("q29", "4 days.", 0),
    ("q29", "2 hours.", 0),
    # q31 200
    ("q31", "200 alder crowns, and the membership ends.", 2),
    ("q31", "100 alder crowns.", 0),
    # q34 "No"
    ("q34", "No: a Day Pass is refunded only if no bicycle has been released with it.", 2),
    ("q34", "You cannot get a refund once you have ridden.", 2),
    ("q34", "A refund is always possible.", 0),
    # q37 3 working days and 20 working days
    ("q37", "It acknowledges a complaint within 3 working days and answers it in full within 20 working days.", 2),
    ("q37", "Within 3 working days.", 1),
    ("q37", "A full response within 20 days.", 1),
    ("q37", "Within 3 hours.", 0),
    # q38 "No"
    ("q38", "No, it is not collected while the complaint is open.", 2),
    ("q38", "A disputed charge is not collected until the complaint closes.", 2),
    ("q38", "The charge is not a legitimate charge.", 0),
    ("q38", "", 0),
])
def test_key_fact_answers(qid, answer, want):
    assert score(qid, answer) == want


@pytest.mark.parametrize("qid, answer", [
    # an answer that opens with the wrong decision is 0, whatever facts it states
    ("q02", "Yes. The Day Pass has no concession price."),
    ("q11", "Yes, though docks do not release bicycles between 01:00 and 05:00."),
    ("q23", "Yes; e-bikes cannot be hired under 18."),
    ("q25", "Yes, it is not mandatory."),
    ("q27", "Yes: the basket is not for more than 5 kilograms."),
    ("q34", "Yes, you cannot get it refunded in full."),
    ("q38", "The answer is yes: it is not collected."),
    ("q22", "No, only a standard bicycle, on a Day Pass bought by a parent or guardian."),
])
def test_an_answer_opening_with_the_wrong_decision_is_wrong(qid, answer):
    assert score(qid, answer) == 0


@settings(max_examples=120, deadline=None)
@given(st.sampled_from(KEY_FACT), st.integers(1, 12), st.integers(1, 9))
def test_the_reference_is_correct_and_the_question_repeated_states_nothing(qid, art, sub):
    """Every reference answer states all its key facts (2), with or without the question before it; the question's
    own words, with any citation, state none (0): none of its numbers or words is a key fact or a decision."""
    q = QUESTIONS[qid]
    assert score(qid, q.reference) == 2
    assert score(qid, f"Question: {q.question} The answer: {q.reference}") == 2
    assert score(qid, q.question) == 0
    assert score(qid, f"Question: {q.question} (Article {art}.{sub})") == 0


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(QUESTIONS)), st.text(max_size=200))
def test_every_answer_to_every_question_is_decided(qid, answer):
    """Any text at all, on any of the 40 questions, gets an int on the scale, never None and never an exception:
    every tag is a complete stratum of every run. Arithmetic and out-of-scope answers are never 1."""
    got = score(qid, answer)
    assert type(got) is int and got in ((0, 1, 2) if qid in KEY_FACT else (0, 2))


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
