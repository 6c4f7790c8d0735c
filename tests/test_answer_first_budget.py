"""What an answer-first judge (`two_calls`) adds before it is paid: its own max_tokens for the first call
(`answer_max_tokens`), the first calls and the answer they write in the cost plan and under the cost ceiling, and
the room for that answer in the context check. Expected values are computed here by hand from the planted texts,
prices and sizes (and, for an in-process judge, the model's own tokenizer)."""
from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from jinja2 import Environment

from core.errors import BadInput
from judge.judging.answer_first import first_request
from judge.judging.blinding import BlindItem
from judge.judging.budget import Budget, OverBudget, planned_calls
from judge.judging.calls import judge_all
from judge.judging.preflight import check_first_calls, preflight
from models.backends.openai import OpenAIBackend, OpenAIConfig
from models.cache import CallCache
from models.spec import ModelSpec
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.rubric import ANSWER_MAX_TOKENS, RUBRICS_DIR, load_rubric

from conftest import ROOT, http_prereg
from support.scripted_server import ScriptedServer, reply, verdict

# the texts the first call and the grading prompt are built from, typed here (not imported): a change to either is a
# change to what is paid for, and this test should notice it
FIRST_SYSTEM = ("Answer the question below yourself, correctly and concisely. Your answer is kept and shown to you "
                "later, when you grade other answers to the same question.")
SHOWN_EMPTY = "Your own answer to this question, written before you saw the candidate:\n<<<\n\n>>>\n\n"
OVERHEAD = 8  # the cost plan's bound: one token per UTF-8 byte + 8 per message

QUESTIONS = [{"id": "p1", "question": "How many crowns does a Day Pass cost?", "reference": "Four crowns.",
              "tags": [], "cluster": "c1"},
             {"id": "p2", "question": "Wie lange gilt die Jahreskarte? (ß, é)", "reference": "Ein Jahr: 365 Tage.",
              "tags": [], "cluster": "c2"}]


def rubric_folder(folder: Path, name: str, lines: str) -> Path:
    """The shipped correctness rubric with `lines` added at its top, as rubric `name` in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(RUBRICS_DIR / "correctness.j2", folder / "correctness.j2")
    toml = (RUBRICS_DIR / "correctness.toml").read_text().replace('name = "correctness"', f'name = "{name}"')
    (folder / f"{name}.toml").write_text(lines + "\n" + toml)
    return folder


# ---- the registered limit ------------------------------------------------------------------------------------------

@pytest.mark.unit
def test_the_first_call_has_its_own_registered_max_tokens_and_the_rubrics_other_settings(tmp_path):
    folder = rubric_folder(tmp_path / "r", "mine", 'answer_first = "two_calls"\nanswer_max_tokens = 300')
    rubric = load_rubric("mine", folder)
    assert rubric.answer_max_tokens == 300 and rubric.generation.max_tokens == 96  # the verdict's, as shipped
    request = first_request(rubric, "Q?", "R.")
    assert request.generation == dataclasses.replace(rubric.generation, max_tokens=300)
    default = load_rubric("dflt", rubric_folder(tmp_path / "d", "dflt", 'answer_first = "two_calls"'))
    assert default.answer_max_tokens == ANSWER_MAX_TOKENS == 256
    assert first_request(default, "Q?", "R.").generation.max_tokens == 256


@pytest.mark.unit
@pytest.mark.parametrize("lines, line, says", [
    ('answer_first = "two_calls"\nanswer_max_tokens = 0', 2, "must be >= 1"),
    ('answer_first = "two_calls"\nanswer_max_tokens = "long"', 2, "must be an integer"),
    ('answer_first = "two_calls"\nanswer_max_tokens = 1048577', 2, "<= 1,048,576"),
    ('answer_first = "one_reply"\n\nanswer_max_tokens = 64', 3, "only answer_first = \"two_calls\""),
    ('answer_max_tokens = 64', 1, "only answer_first = \"two_calls\""),
])
def test_a_bad_answer_max_tokens_is_refused_naming_file_line_and_key(tmp_path, lines, line, says):
    folder = rubric_folder(tmp_path / "r", "bad", lines)
    with pytest.raises(BadInput) as e:
        load_rubric("bad", folder)
    assert (e.value.file, e.value.line, e.value.field) == (str(folder / "bad.toml"), line, "answer_max_tokens")
    assert says in e.value.message, e.value.message


@pytest.mark.unit
def test_the_shipped_answer_first_rubric_loads_with_the_correctness_verdict():
    first, plain = load_rubric("correctness-first"), load_rubric("correctness")
    assert (first.answer_first, first.answer_max_tokens) == ("two_calls", 128)
    assert (first.template, first.schema, first.scale, first.score_field, first.bool_fields, first.generation) == \
        (plain.template, plain.schema, plain.scale, plain.score_field, plain.bool_fields, plain.generation)
    first.check_variables({"question", "reference", "answer"}, "one answer")


@pytest.mark.unit
def test_a_first_call_its_judge_cannot_send_is_refused_at_answer_max_tokens(tmp_path):
    """An Anthropic judge thinking with a budget of 1024 tokens: the verdict's max_tokens (2048) is above it, the
    first call's default (256) is not, and the API would refuse that call; refused before any call, at the rubric's
    answer_max_tokens, and accepted once it is registered above the budget."""
    exp = load_experiment(priced_experiment(tmp_path, 0))
    exp = dataclasses.replace(exp, models={**exp.models, "gpt": ModelSpec("gpt", "anthropic", "claude-x")})
    thinking = "[generation]\ntemperature = 0.0\nmax_tokens = 96"
    for name, top, line in (("dflt", 'answer_first = "two_calls"', None),
                            ("low", 'answer_first = "two_calls"\nanswer_max_tokens = 1024', 2)):
        folder = rubric_folder(tmp_path / name, name, top)
        toml = (folder / f"{name}.toml").read_text()
        assert thinking in toml
        (folder / f"{name}.toml").write_text(toml.replace(thinking, "[generation]\nmax_tokens = 2048\nthinking = true"
                                                          "\nthinking_budget = 1024"))
        with pytest.raises(BadInput) as e:
            check_first_calls(exp, {("openai", "single"): load_rubric(name, folder)})
        assert (e.value.file, e.value.line, e.value.field) == (str(folder / f"{name}.toml"), line, "answer_max_tokens")
        assert "below max_tokens" in e.value.message
    folder = rubric_folder(tmp_path / "ok", "ok", 'answer_first = "two_calls"\nanswer_max_tokens = 1025')
    toml = (folder / "ok.toml").read_text()
    (folder / "ok.toml").write_text(toml.replace(thinking, "[generation]\nmax_tokens = 2048\nthinking = true\n"
                                                 "thinking_budget = 1024"))
    check_first_calls(exp, {("openai", "single"): load_rubric("ok", folder)})


# ---- the cost plan and the ceiling -------------------------------------------------------------------------------

def priced_experiment(tmp_path: Path, retest: int) -> Path:
    """Two HTTP arms and an HTTP judge at planted prices, over QUESTIONS."""
    exp = tmp_path / "exp"
    (exp / "sets").mkdir(parents=True)
    (exp / "sets" / "exam.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS))
    arms = ('[models.served]\nbackend = "openai"\nsource = "arm-model"\nbase_url = "http://127.0.0.1:9/v1"\n'
            'family = "served"\nprice_input = 1.0\nprice_output = 1.0\n\n'
            + "".join(f'[[arms]]\nname = "{a}"\nmodel = "served"\nquants = ["served"]\n'
                      'generation = { temperature = 0.0, max_tokens = 64, seed = 0 }\n\n' for a in ("a", "b")))
    text = http_prereg("plan", "http://127.0.0.1:9/v1", arms, [("H1", "a", "b")],
                       judge_settings="price_input = 3.0\nprice_output = 15.0")
    (exp / "prereg.toml").write_text(text.replace("verdict_attempts = 2", f"verdict_attempts = 2\nretest = {retest}"))
    return exp


@pytest.mark.unit
@pytest.mark.parametrize("retest", [0, 3])
def test_the_cost_plan_counts_one_first_call_per_question_and_the_answer_it_writes(tmp_path, retest):
    exp = load_experiment(priced_experiment(tmp_path, retest))
    questions = load_questions(exp.set_paths())
    [judge] = [j for j in exp.judges if j.name == "openai"]
    rubric = load_rubric("correctness-first")
    plan = planned_calls(exp, ["a", "b"], questions, [judge], {("openai", "single"): rubric}, "single")
    line = next(x for x in plan["lines"] if x["role"] == "judge")

    # by hand: 2 arms x 2 questions verdicts, `retest` of them asked again; 2 first calls (one per question)
    template = Environment(keep_trailing_newline=True).from_string((RUBRICS_DIR / "correctness.j2").read_text())
    system = rubric.system.encode()
    by_question = {}
    for q in QUESTIONS:
        grading = SHOWN_EMPTY + template.render(question=q["question"], reference=q["reference"], answer="")
        # the grading prompt (answer and own answer empty) + the judge's own answer at 128 + the arm's at 64
        verdict_in = len(system) + OVERHEAD + len(grading.encode()) + OVERHEAD + 128 + 64
        first_user = f"Question:\n<<<\n{q['question']}\n>>>\n\nReference answer:\n<<<\n{q['reference']}\n>>>"
        first_in = len(FIRST_SYSTEM.encode()) + OVERHEAD + len(first_user.encode()) + OVERHEAD
        by_question[q["id"]] = (verdict_in, first_in)
    verdicts = [q["id"] for _arm in ("a", "b") for q in QUESTIONS]  # the order the plan takes them in
    verdicts += verdicts[:retest]
    input_tokens = sum(by_question[q][0] for q in verdicts) + sum(v[1] for v in by_question.values())
    output_tokens = len(verdicts) * 96 + 2 * 128
    assert (line["calls"], line["input_tokens"], line["max_output_tokens"]) == (len(verdicts) + 2, input_tokens,
                                                                              output_tokens)
    assert line["usd"] == pytest.approx((input_tokens * 3.0 + output_tokens * 15.0) / 1e6, rel=1e-12)

    # the plain rubric plans none of it: the same verdicts without the first calls and the judge's answers
    plain = planned_calls(exp, ["a", "b"], questions, [judge], {("openai", "single"): load_rubric("correctness")},
                          "single")
    line0 = next(x for x in plain["lines"] if x["role"] == "judge")
    shown = len(SHOWN_EMPTY.encode()) + 128
    assert line0["calls"] == len(verdicts)
    assert line0["input_tokens"] == input_tokens - len(verdicts) * shown - sum(v[1] for v in by_question.values())
    assert line0["max_output_tokens"] == len(verdicts) * 96


@pytest.mark.integration
def test_the_ceiling_reserves_the_first_call_at_its_own_max_tokens_before_it_is_sent(tmp_path):
    """A priced judge behind a scripted server: the first call's bound (its messages' bytes + 8 each, 200 output
    tokens at the prices) is reserved before it is sent; a ceiling below it sends nothing, one above it but below
    it + the verdict's bound sends the first call only, and what it cost is counted as spent."""
    rubric = load_rubric("two", rubric_folder(tmp_path / "r", "two", 'answer_first = "two_calls"\n'
                                                                         'answer_max_tokens = 200'))
    item = BlindItem("L1", "p1", QUESTIONS[0]["question"], QUESTIONS[0]["reference"], "It costs four crowns.")
    user = f"Question:\n<<<\n{item.question}\n>>>\n\nReference answer:\n<<<\n{item.reference}\n>>>"
    first_in = len(FIRST_SYSTEM.encode()) + OVERHEAD + len(user.encode()) + OVERHEAD
    first_bound = (first_in * 3.0 + 200 * 15.0) / 1e6
    good = {"rationale": "Matches.", "score": 2, "harmful": False}
    for ceiling, sent in ((first_bound * 0.999, 0), (first_bound * 1.001, 1)):
        folder = tmp_path / f"c{sent}"
        folder.mkdir()
        with ScriptedServer([reply("Four crowns, I think."), verdict(good)]) as server:
            model = ModelSpec("judge", "openai", "judge", base_url=server.openai_url, price_input=3.0,
                              price_output=15.0)
            budget = Budget(ceiling, 0.0, [model], folder, "python -m judge run")
            cache = CallCache(folder / "calls.sqlite")
            cache.guard = budget
            backend = OpenAIBackend(OpenAIConfig(model="judge", base_urls=(server.openai_url,), attempts=1,
                                                 timeout_s=10))
            try:
                with pytest.raises(OverBudget):
                    judge_all("j", backend, rubric, [item], cache, folder / "judgments.jsonl", progress=False)
            finally:
                backend.close()
                cache.close()
        assert len(server.seen) == sent
        if sent:
            assert item.answer not in server.seen[0].prompt and server.seen[0].body["max_tokens"] == 200
            usage = server.seen[0]
            want = (len(usage.prompt.split()) * 3.0 + len("Four crowns, I think.".split()) * 15.0) / 1e6
            assert budget.spent == pytest.approx(want, rel=1e-12)  # measured, as the scripted server reports it
        else:
            assert budget.spent == 0.0


# ---- the context check before the first call --------------------------------------------------------------------

@pytest.mark.integration
def test_the_context_check_keeps_room_for_the_judges_own_answer(tmp_path):
    """The demo's in-process judge, its n_ctx planted at the size the tokenizer says the plain rubric needs: the plain
    rubric fits it (as the answer-first one did before its answer was counted); the answer-first rubric needs its
    own answer's room (answer_max_tokens) and the opening that shows it on top, and is refused one token short."""
    from arms.context import counter

    exp_dir = tmp_path / "demo"
    shutil.copytree(ROOT / "sealed" / "demo", exp_dir)
    exp = load_experiment(exp_dir)
    questions = load_questions(exp.set_paths())[:3]
    [judge] = [j for j in exp.judges if j.name == "local"]
    plain = load_rubric("correctness")
    first = load_rubric("two", rubric_folder(tmp_path / "r", "two", 'answer_first = "two_calls"\n'
                                                                      'answer_max_tokens = 100'))
    count = counter(exp.models[judge.model], exp.dir)
    template = Environment(keep_trailing_newline=True).from_string((RUBRICS_DIR / "correctness.j2").read_text())

    def need(opening: str, own: int) -> int:  # the largest prompt + the arm's answer (64) + own + the verdict (96)
        return max(count([("system", plain.system), ("user", opening + template.render(
            question=q.question, reference=q.reference, answer=""))]) for q in questions) + 64 + own + 96

    need_plain, need_first = need("", 0), need(SHOWN_EMPTY, 100)
    assert need_first > need_plain + 100  # the opening that shows the answer costs tokens of its own

    def check(rubric, n_ctx: int) -> None:
        at = dataclasses.replace(exp, runtime=dataclasses.replace(exp.runtime, n_ctx=n_ctx))
        preflight(at, ["base"], questions, questions, [judge], {(judge.name, "single"): rubric})

    check(plain, need_plain)
    with pytest.raises(BadInput) as e:  # what the plain rubric needs leaves no room for the judge's own answer
        check(first, need_plain)
    assert e.value.field == "question" and e.value.file == str(exp_dir / "sets" / "exam.jsonl")
    assert "its own answer up to 100 tokens" in e.value.message
    with pytest.raises(BadInput):
        check(first, need_first - 1)
    check(first, need_first)
