"""`judge verify` checks what should be in a results folder, not only what is there, and takes nothing it checks
against from the folder itself: the scope is binding.json's (every registered cell has its row, every blinded answer
its key and one verdict per judge), run.json's copy of it is compared, call keys are re-derived from the requests,
model identities are compared with the registration, and the call cache is the verifier's, named or missing loudly.

Every forger here recomputes numbers.json, report.md and run.json's cost table with our own code after the edit."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core import jsonl
from core.records import AnswerRow, Binding, RunInfo
from judge.gold.sources import run_gold
from judge.judging.blinding import blind
from judge.judging.calls import build_request, prompt_sha256
from judge.judging.cost import costs
from judge.numbers.analysis import compute_numbers, write_numbers
from judge.outputs.report import folder_report
from judge.outputs.review_md import write_review
from judge.results.runinfo import bound_scope, registered
from judge.verify.answers import expected_identity, identity_findings
from judge.verify.checks import verify
from judge.verify.scope import record_findings
from models.backends.base import STRUCTURED
from models.cache import CallCache, call_key
from models.load import open_backend
from models.spec import ModelSpec, Runtime
from registration.prereg import load_experiment
from registration.questions import load_questions
from registration.rubric import load_rubric

from support.forgery import label_key

RAW = ("answers.jsonl", "blinding.jsonl", "judgments.jsonl")


def records(path: Path) -> list[dict]:
    return [r for _, r in jsonl.read(path)]


def rewrite(path: Path, recs: list[dict]) -> None:
    path.write_text("".join(jsonl.dumps(r) + "\n" for r in recs))


def reanalyse(out: Path) -> None:
    """run.json's cost, numbers.json and report.md recomputed from the (edited) files, by our own code."""
    info = json.loads((out / "run.json").read_text())
    e = load_experiment(info["experiment_dir"])
    info["cost"] = costs(e, info["arms"], info["judge"]["panel"], set(info["question_ids"]), out)
    (out / "run.json").write_text(json.dumps(info, indent=1) + "\n")
    numbers = compute_numbers(e, load_questions(e.set_paths()), out, RunInfo.from_dict(info, "run.json"),
                              run_gold(e, out))
    write_numbers(numbers, out / "numbers.json")
    write_review(out, e.dir)
    (out / "report.md").write_text(folder_report(out))


@pytest.fixture
def run(small_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(small_run, out)
    return out


def _cell(a: dict) -> str:
    return f"no answer row for arm {a['arm']!r} at {a['quant']}, question {a['question_id']!r}, sample {a['sample']}"


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_rows_keys_or_verdicts_removed_at_random_fail_verify_naming_each(small_run, tmp_path_factory, data):
    out = tmp_path_factory.mktemp("removed") / "run"
    shutil.copytree(small_run, out)
    files = {name: records(out / name) for name in RAW}
    assert not any("retry_of" in r for recs in files.values() for r in recs)  # one record per key: any may go
    drop = {name: data.draw(st.sets(st.sampled_from(range(len(recs))), max_size=4), label=name)
            for name, recs in files.items()}
    if not any(drop.values()):
        drop["judgments.jsonl"] = {data.draw(st.sampled_from(range(len(files["judgments.jsonl"]))))}
    for name, recs in files.items():
        rewrite(out / name, [r for i, r in enumerate(recs) if i not in drop[name]])
    gone = {name: [files[name][i] for i in sorted(drop[name])] for name in RAW}
    try:
        reanalyse(out)
    except Exception:  # e.g. a verdict left without its key: our code cannot even count it; numbers stay stale
        pass
    found = verify(out)
    text = "\n".join(found.problems)
    assert found.problems
    left = {r["row"] for r in records(out / "answers.jsonl")}
    label_of = {k["row"]: k["label"] for k in files["blinding.jsonl"]}
    for a in gone["answers.jsonl"]:
        assert _cell(a) in text, (a, text)
    for k in gone["blinding.jsonl"]:
        if k["row"] in left:
            assert f"field 'label': {k['label']} (from " in text and "is missing" in text, (k, text)
    for j in gone["judgments.jsonl"]:
        rows = [row for row, label in label_of.items() if label == j["label"]]
        if rows and rows[0] in left:
            assert f"no verdict of judge {j['judge']!r} for label {j['label']}" in text, (j, text)


@pytest.mark.slow
def test_an_arms_unfavourable_rows_removed_with_their_keys_and_verdicts_fail_naming_each_cell(run):
    keys = {k["label"]: k for k in records(run / "blinding.jsonl")}
    verdicts = records(run / "judgments.jsonl")
    low = min(j["score"] for j in verdicts if j["status"] == "scored" and keys[j["label"]]["arm"] == "trained")
    bad = [keys[j["label"]] for j in verdicts if j["status"] == "scored" and j["score"] == low
           and keys[j["label"]]["arm"] == "trained"]
    rows, labels = {k["row"] for k in bad}, {k["label"] for k in bad}
    answers = records(run / "answers.jsonl")
    rewrite(run / "answers.jsonl", [a for a in answers if a["row"] not in rows])
    rewrite(run / "blinding.jsonl", [k for k in keys.values() if k["label"] not in labels])
    rewrite(run / "judgments.jsonl", [j for j in verdicts if j["label"] not in labels])
    reanalyse(run)
    found = "\n".join(verify(run).problems)
    for a in (a for a in answers if a["row"] in rows):
        assert _cell(a) in found, found
    assert "binding.json registers this cell" in found


@pytest.mark.slow
def test_questions_removed_from_run_json_fail_on_its_scope_and_the_numbers(run):
    info = json.loads((run / "run.json").read_text())
    dropped = info["question_ids"].pop()
    (run / "run.json").write_text(json.dumps(info, indent=1) + "\n")
    reanalyse(run)  # numbers and cost over the narrower list
    assert json.loads((run / "numbers.json").read_text())["questions"] == len(info["question_ids"])
    found = verify(run).problems
    line = next(p for p in found if p.startswith(f"{run / 'run.json'}: field 'question_ids': "))
    assert line.startswith(f"{run / 'run.json'}: field 'question_ids': reads {info['question_ids']!r}"), found
    assert line.endswith(f"{dropped!r}]")  # what binding.json and the experiment folder give
    assert "numbers.json questions = 2, but the recomputation from raw files gives 3" in found


def _registered_leaves(x, path=()):
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _registered_leaves(v, (*path, k))
    else:
        yield path, x


SCALAR = st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=5)
JSON = SCALAR | st.lists(SCALAR, max_size=2)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_registered_field_of_run_json_edited_is_named(small_run, data):
    """Everything in run.json that follows from the registration and binding.json (scope, judges, mode, settings,
    hashes, warnings): an edit of any of it is a finding naming the field."""
    info = json.loads((small_run / "run.json").read_text())
    exp = load_experiment(info["experiment_dir"])
    scope = bound_scope(Binding.read_file(small_run / "binding.json"), exp, small_run / "binding.json")
    expected = registered(exp, scope, load_rubric(exp.rubric))
    assert record_findings(info, expected, small_run / "run.json") == []
    path, value = data.draw(st.sampled_from(list(_registered_leaves(expected))))
    new = data.draw(JSON.filter(lambda v: v != value and not (isinstance(v, (int, float)) and v == value)))
    edited = json.loads(json.dumps(info))
    node = edited
    for k in path[:-1]:
        node = node[k]
    node[path[-1]] = new
    found = record_findings(edited, expected, small_run / "run.json")
    assert any(f"field {'.'.join(path)!r}: reads {new!r}" in f for f in found), (path, new, found)


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_any_field_of_a_recorded_identity_changed_or_added_is_named(small_run, data):
    """The judge's identity in run.json and each answer row's (both in every call key): whatever field is changed,
    added or dropped, to whatever value, the registration and the read-back settings give another identity."""
    info = json.loads((small_run / "run.json").read_text())
    exp = load_experiment(info["experiment_dir"])
    judge = next(j for j in exp.judges if j.name == info["judge"]["primary"])
    rows = records(small_run / "answers.jsonl")
    cases = [(info["judge"]["identities"][judge.name], exp.models[judge.model], judge.quant, (),
              next(iter(info["judge"]["effective_settings"].values())))]
    for a in (rows[0], next(r for r in rows if exp.arm(r["arm"]).adapters)):
        arm = exp.arm(a["arm"])
        cases.append((a["identity"], exp.models[arm.model], a["quant"],
                      tuple(exp.adapters[x] for x in arm.adapters), a["effective"]))
    ident, spec, quant, adapters, eff = data.draw(st.sampled_from(cases))
    assert identity_findings(ident, spec, quant, adapters, exp.runtime, eff) == []
    key = data.draw(st.sampled_from(sorted({*ident, "batch", "gpu_layers", "flash_attn", "cpu_extra_buffers", "model",
                                            "base_url", "structured", "seed"})))
    if key in ident and data.draw(st.booleans(), label="drop it"):
        edited = {k: v for k, v in ident.items() if k != key}
    else:
        new = data.draw(JSON.filter(lambda v: key not in ident or json.dumps(v) != json.dumps(ident[key])))
        edited = {**ident, key: new}
    found = identity_findings(edited, spec, quant, adapters, exp.runtime, eff)
    assert any(f == f"identity.{key}" for f, _ in found), (key, edited, found)


@pytest.mark.slow
def test_an_answer_rewritten_with_a_call_key_the_cache_lacks_fails_on_the_key_and_the_cache(run):
    """The answer and its verdict rewritten consistently (judge prompt and call keys re-derived, the reply forged),
    the answer row's call key replaced by one the run's cache does not hold."""
    info = json.loads((run / "run.json").read_text())
    e = load_experiment(info["experiment_dir"])
    recs = records(run / "answers.jsonl")
    line, a = next((i, a) for i, a in enumerate(recs, 1) if a["arm"] == "base" and a["status"] == "ok")
    a["text"] = a["raw_output"] = "The deposit is never returned."
    a["calls"] = ["f" * 64]
    rewrite(run / "answers.jsonl", recs)
    items, _ = blind([AnswerRow.from_dict(a)], {q.id: q for q in load_questions(e.set_paths())},
                     label_key(run), e.seed, e.scrub)
    rubric = load_rubric(e.rubric)
    jrecs = records(run / "judgments.jsonl")
    jline, j = next((i, j) for i, j in enumerate(jrecs, 1) if j["label"] == items[0].label)
    j.update(status="scored", score=2, fields={"rationale": "correct", "score": 2, "harmful": False}, repaired=False,
             error=None, prompt_sha256=prompt_sha256(build_request(rubric, items[0], 0)),
             calls=[call_key(info["judge"]["identities"][j["judge"]], build_request(rubric, items[0], 0))])
    j["attempts"] = [{"raw": json.dumps(j["fields"]), "finish_reason": "stop", "error": None, "repaired": False}]
    rewrite(run / "judgments.jsonl", jrecs)
    reanalyse(run)
    found = "\n".join(verify(run).problems)
    answers = run / "answers.jsonl"
    assert f"{answers}:{line}: field 'calls[0]': reads ffffffffffff…, but the request re-derived" in found, found
    assert f"{answers}:{line}: field 'calls[0]': call ffffffffffff… is in no call cache consulted" in found
    assert f"{run / 'judgments.jsonl'}:{jline}: field 'calls[0]': call " in found  # the forged verdict's call


@pytest.mark.slow
def test_a_judge_identity_edited_with_every_call_key_rederived_fails_on_the_registration_and_the_cache(run):
    info = json.loads((run / "run.json").read_text())
    e = load_experiment(info["experiment_dir"])
    name = info["judge"]["primary"]
    forged = {**info["judge"]["identities"][name], "n_ctx": 4096}
    info["judge"]["identities"][name] = info["judge"]["identity"] = forged
    (run / "run.json").write_text(json.dumps(info, indent=1) + "\n")
    answers = [AnswerRow.from_dict(a) for a in records(run / "answers.jsonl")]
    items, _ = blind(answers, {q.id: q for q in load_questions(e.set_paths())}, label_key(run),
                     e.seed, e.scrub)
    by_label, rubric = {i.label: i for i in items}, load_rubric(e.rubric)
    jrecs = records(run / "judgments.jsonl")
    for j in jrecs:
        j["calls"] = [call_key(forged, build_request(rubric, by_label[j["label"]], k)) for k in range(len(j["calls"]))]
    rewrite(run / "judgments.jsonl", jrecs)
    reanalyse(run)
    found = "\n".join(verify(run).problems)
    assert (f"{run / 'run.json'}: field 'judge.identities.{name}.n_ctx': reads 4096, but the registration of "
            f"model {next(j.model for j in e.judges if j.name == name)!r}, [runtime] and the settings read back from "
            f"it give {e.runtime.n_ctx}") in found, found
    assert f"{run / 'judgments.jsonl'}:1: field 'calls[0]': call " in found  # none of its calls is the run's


@pytest.mark.slow
def test_a_cache_that_holds_none_of_the_runs_calls_is_a_finding_and_several_may_be_named(run, tmp_path):
    other = tmp_path / "other-cache"
    other.mkdir()
    CallCache(other / "calls.sqlite").close()
    found = verify(run, caches=[other]).problems  # `--cache PATH`: a BLINDEVAL_CACHE folder, or its calls.sqlite
    assert len(found) == 1 and found[0].startswith(f"call cache: {other / 'calls.sqlite'} holds none of the"), found
    assert verify(run, caches=[other / "calls.sqlite"]).problems == found
    # the run's cache named beside another one: every call is found in one of them
    assert verify(run, caches=[other, Path(os.environ["BLINDEVAL_CACHE"])]).problems == []


@pytest.mark.unit
@settings(max_examples=8, deadline=None)  # each opens real SDK clients: about half a second
@given(backend=st.sampled_from(["openai", "anthropic"]), source=st.text(min_size=1, max_size=12),
       urls=st.lists(st.integers(1024, 65535).map(lambda p: f"http://127.0.0.1:{p}/v1"), max_size=3, unique=True),
       structured=st.sampled_from(STRUCTURED), sampling=st.booleans())
def test_the_identity_verify_expects_of_an_http_model_is_the_one_its_backend_puts_in_call_keys(
        tmp_path_factory, backend, source, urls, structured, sampling):
    """One definition per backend (models/backends), one re-derivation in verify: they must agree on every
    registration, or verify would name honest runs (or miss forged identities)."""
    urls = urls[:1] if backend == "anthropic" else urls
    spec = ModelSpec(name="m", backend=backend, source=source, base_url=urls[0] if urls else None,
                     base_urls=tuple(urls), structured=structured if backend == "openai" else "json_schema",
                     sampling_params=sampling if backend == "anthropic" else False)
    b = open_backend(spec, "served", (), tmp_path_factory.mktemp("exp"), Runtime())
    try:
        assert expected_identity(spec, (), Runtime(), {}) == b.identity()
        assert identity_findings(b.identity(), spec, "served", (), Runtime(), {}) == []
    finally:
        b.close()
