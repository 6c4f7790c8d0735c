"""`judge publish` and `judge verify BUNDLE`: a run whose question set is sealed private, published without it.

The run is real (`judge run` against the scripted server on 127.0.0.1): its arms answer by repeating the question,
its judge quotes the reference and the answer in its rationale and now and then replies with prose, so the private
text is in every raw file the way a real judge's rationale and a real model's echo put it there. The set's questions
and references carry a made-up word found nowhere else, so a leak cannot hide behind a public file that happens to
say the same.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_folder import SERVED, experiment, run

from core import jsonl
from core.errors import BadInput
from judge.analysis import ANCHOR_FILES
from judge.bundle import publish, redact_answer, redact_judgment, stand_in, verify_bundle
from registration.seal import seal

from conftest import cli
from support.scripted_server import ScriptedServer, Seen, Step, reply, verdict

NONCE = "Quibblethorpe"  # in every private question and reference, in no other file
WORDS = ["«Day»", 'the "Annual"', "Ärger-free", "night\\owl", "½-price", "weekend"]
QUESTIONS = [{"id": f"p{i}", "question": f"What does {NONCE} rule {i} say about {w} passes in {NONCE}?",
              "reference": f"{NONCE} rule {i}: a {w} pass costs {7 * i} zlotnik, by {NONCE} rule {i}.{i}",
              "tags": ["private", f"group{i % 2}"]} for i, w in enumerate(WORDS, start=1)]


class Echo:
    """An arm repeats its question; a judge quotes the reference and the answer it grades (the end of its prompt),
    and one verdict in four is prose instead of JSON (unscored: its raw reply and parse error hold the quote)."""

    def __call__(self, seen: Seen) -> Step:
        h = int(hashlib.sha256(seen.prompt.encode()).hexdigest(), 16)
        if seen.model.startswith("judge-model"):
            if h % 4 == 0:
                return reply(f"I would say the reference, {seen.prompt[-260:]}, is met.")
            return verdict({"rationale": "quoting " + seen.prompt[-260:], "score": h % 3, "harmful": False})
        return reply(f"{seen.model} repeats: {seen.prompt}")


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> tuple[Path, Path, Path, str]:
    """(experiment, results folder, bundle, the anchor `judge run` printed)."""
    root = tmp_path_factory.mktemp("published")
    with ScriptedServer(Echo(), models=SERVED) as server:
        exp = experiment(root, server.openai_url)
        (exp / "sets" / "exam.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS))
        seal(exp, private=("sets/exam.jsonl",))
        r = run(exp, root / "out")
    # unscored verdicts (the prose replies) leave H1 undecided, so the run exits 1: finished, and published as it is
    assert r.returncode == 1 and "check failed: H1 decided nothing" in r.stderr, r.stderr
    recorded = r.stdout.split("anchor: ")[1].strip()
    p = cli("judge", "publish", str(root / "out"), "--out", str(root / "bundle"))
    assert p.returncode == 0, p.stderr
    assert f"tied to anchor {recorded}" in p.stdout
    return exp, root / "out", root / "bundle", recorded


def by_hand_anchor(folder: Path) -> str:
    listing = "".join(f"{hashlib.sha256((folder / n).read_bytes()).hexdigest()}  {n}\n" for n in ANCHOR_FILES)
    return hashlib.sha256(listing.encode()).hexdigest()


@pytest.mark.integration
def test_a_run_with_a_private_set_published_verifies_from_the_bundle_alone(published):
    exp, out, bundle, recorded = published
    assert not (bundle / "experiment" / "sets" / "exam.jsonl").exists()
    assert recorded == by_hand_anchor(out)
    r = cli("judge", "verify", str(bundle), "--anchor", recorded)
    assert r.returncode == 0, r.stderr
    unchecked = [line for line in r.stdout.splitlines() if line.startswith("unchecked: ")]
    assert len(unchecked) == 1 and unchecked[0].startswith("unchecked: without the private files (sets/exam.jsonl): ")
    assert f"anchor: {recorded}" in r.stdout.splitlines()
    assert "checked: the anchor below is the original results folder's" in r.stdout
    assert "re-run" not in r.stdout + r.stderr
    wrong = verify_bundle(bundle, recorded="0" * 64).problems
    assert wrong == [f"anchor: this folder's anchor is {recorded}, not the {'0' * 64} recorded: something a decision "
                     "depends on (binding.json, run.json, the raw files or numbers.json) changed since"]


def private_texts() -> list[str]:
    """Every question and reference of the private set, each whole and as 16-character pieces from its start, middle
    and end, and the made-up word."""
    out = [NONCE]
    for q in QUESTIONS:
        for text in (q["question"], q["reference"]):
            out += [text, text[:16], text[len(text) // 2 - 8:len(text) // 2 + 8], text[-16:]]
    return out


def forms(text: str) -> list[bytes]:
    """A text as a file may hold it: UTF-8, and inside a JSON string (escaped, with or without non-ASCII escapes)."""
    return [text.encode(), json.dumps(text)[1:-1].encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode()]


def holding(folder: Path, texts: list[str]) -> dict[str, list[str]]:
    """Each file under `folder` that holds any of `texts` in any form, with the texts it holds."""
    found = {}
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        hits = [t for t in texts if any(f in data for f in forms(t))]
        if hits:
            found[str(path.relative_to(folder))] = hits
    return found


@pytest.mark.integration
def test_the_bundle_holds_no_byte_of_the_private_set(published):
    exp, out, bundle, _ = published
    texts = private_texts()
    # the results folder holds them all (answers repeat the questions, rationales and prose replies quote the
    # references), so this check can fail
    held = holding(out, texts)
    assert {"answers.jsonl", "judgments.jsonl", "review.md"} <= set(held), held
    assert set(sum(held.values(), [])) == set(texts)
    assert holding(bundle, texts) == {}


@pytest.mark.integration
def test_an_edited_score_in_the_bundle_fails_naming_its_row(published, tmp_path):
    _, _, bundle, _ = published
    edited = tmp_path / "bundle"
    shutil.copytree(bundle, edited)
    path = edited / "results" / "judgments.jsonl"
    lines = path.read_text().splitlines()
    n = next(i for i, line in enumerate(lines) if json.loads(line)["status"] == "scored")
    rec = json.loads(lines[n])
    rec["score"] = rec["fields"]["score"] = (rec["score"] + 1) % 3
    lines[n] = jsonl.dumps(rec)
    path.write_text("\n".join(lines) + "\n")
    problems = verify_bundle(edited).problems
    assert problems[0].startswith(f"{path}:{n + 1}: this row is not the one `judge publish` wrote"), problems
    assert any(p.startswith("numbers.json cells[") for p in problems)  # and the numbers no longer follow from the rows
    r = cli("judge", "verify", str(edited))
    assert r.returncode == 1 and f"  - {path}:{n + 1}: this row is not the one" in r.stderr, r.stderr


@pytest.mark.integration
def test_the_bundle_is_tied_to_its_manifest(published, tmp_path):
    """The published experiment folder is checked by its seal, and its MANIFEST (which binds the private set by
    sha256) by the hash binding.json recorded of it: neither a sealed file nor the private set's hash can change."""
    _, _, bundle, _ = published
    edited = tmp_path / "prereg"
    shutil.copytree(bundle, edited)
    with (edited / "experiment" / "prereg.toml").open("a") as f:
        f.write("# edited after the run\n")
    problems = verify_bundle(edited).problems
    assert problems and problems[0].startswith("seal: ") and "prereg.toml" in problems[0], problems

    edited = tmp_path / "manifest"
    shutil.copytree(bundle, edited)
    other = hashlib.sha256(b"another private set").hexdigest()
    manifest = edited / "experiment" / "MANIFEST"
    was = json.loads((edited / "BUNDLE.json").read_text())["private"]["sets/exam.jsonl"]
    assert was in manifest.read_text()
    manifest.write_text(manifest.read_text().replace(was, other))
    doc = json.loads((edited / "BUNDLE.json").read_text())
    doc["private"]["sets/exam.jsonl"] = other  # consistently, as a forger would
    (edited / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
    problems = verify_bundle(edited).problems
    assert problems[0].startswith("binding.json: MANIFEST sha256: bound "), problems
    assert any(p.startswith("binding.json: set sets/exam.jsonl sha256: bound ") for p in problems), problems


@pytest.mark.integration
def test_a_withheld_private_set_is_named_and_never_asks_for_a_rerun(published, tmp_path):
    exp, out, _, _ = published
    withheld = tmp_path / "exp"
    shutil.copytree(exp, withheld)
    (withheld / "sets" / "exam.jsonl").unlink()
    r = cli("judge", "verify", str(out), "--exp", str(withheld), "--no-cache")
    assert r.returncode == 2
    assert f"{withheld / 'sets' / 'exam.jsonl'}: is sealed private" in r.stderr and "judge publish" in r.stderr
    assert "re-run" not in r.stderr, r.stderr


@pytest.mark.integration
def test_with_the_private_set_at_hand_the_published_questions_are_checked_against_it(published, tmp_path):
    exp, _, bundle, _ = published
    edited = tmp_path / "bundle"
    shutil.copytree(bundle, edited)
    qpath = edited / "questions.jsonl"
    rows = [json.loads(line) for line in qpath.read_text().splitlines()]
    rows[2]["question_sha256"] = hashlib.sha256(b"another question").hexdigest()  # no number reads it
    qpath.write_text("".join(jsonl.dumps(r) + "\n" for r in rows))
    doc = json.loads((edited / "BUNDLE.json").read_text())
    doc["questions_sha256"] = hashlib.sha256(qpath.read_bytes()).hexdigest()  # consistently, as a forger would
    (edited / "BUNDLE.json").write_text(json.dumps(doc, indent=1) + "\n")
    alone = verify_bundle(edited)
    assert alone.problems == []
    assert "questions.jsonl's account of sets/exam.jsonl (each question's and reference's sha256" in alone.unchecked[0]
    team = verify_bundle(edited, exp)
    want = hashlib.sha256(QUESTIONS[2]["question"].encode()).hexdigest()
    assert team.problems == [f"{qpath}:3: field 'question_sha256': reads {rows[2]['question_sha256']!r}, but question "
                             f"'p3' of sets/exam.jsonl gives {want!r}"]
    assert len(team.unchecked) == 1 and team.unchecked[0].startswith("what the bundle withholds: ")


@pytest.mark.integration
def test_publish_writes_a_new_folder_outside_the_run_and_the_experiment(published, tmp_path):
    exp, out, bundle, _ = published
    for target, said in ((bundle, "exists: a bundle is written to a new folder"),
                         (out / "bundle", "lies inside the results folder"),
                         (exp / "bundle", "lies inside the experiment folder")):
        with pytest.raises(BadInput) as e:
            publish(out, target)
        assert said in str(e.value)
    assert not (out / "bundle").exists() and not (exp / "bundle").exists()


# --- what is withheld from a row, for any row ----------------------------------------------------------------

secret = st.text(min_size=1, max_size=12).map(lambda s: f"\u00a7{s}\u00b6")  # § and ¶: in no published value
text = st.text(max_size=20)


def leaks(record: dict, s: str) -> bool:
    line = jsonl.dumps(record)
    return any(f.decode() in line for f in forms(s)) or s in json.dumps(record)


@pytest.mark.unit
@settings(max_examples=150, deadline=None)
@given(secret, text, st.dictionaries(st.sampled_from(["message", "body", "detail"]), st.just(None), max_size=3),
       st.sampled_from(["timeout", "http", "other"]))
def test_an_answer_row_keeps_what_the_numbers_read_and_no_byte_of_its_text(s, words, extra, kind):
    row = {"type": "answer", "version": 1, "row": "r1", "arm": "base", "quant": "Q8_0", "question_id": "q1",
           "sample": 0, "status": "ok", "truncated": False, "prompt_tokens": 5, "completion_tokens": 7,
           "calls": ["a" * 64], "settings": {"max_tokens": 64}, "retry_of": 3,
           "text": f"{words} {s} {words}", "raw_output": s, "trace": {"prompt": [s], "ids": ["d1"]},
           "error": {"type": "APIError", "kind": kind, "status": 500, "message": s, **{k: s for k in extra}},
           "a_later_field": {"nested": [s]}}
    out = redact_answer(row)
    assert not leaks(out, s)
    assert {k: out[k] for k in ("row", "arm", "quant", "question_id", "sample", "status", "truncated", "calls",
                                "prompt_tokens", "completion_tokens", "settings", "retry_of")} == \
        {k: row[k] for k in ("row", "arm", "quant", "question_id", "sample", "status", "truncated", "calls",
                             "prompt_tokens", "completion_tokens", "settings", "retry_of")}
    assert out["text"]["withheld"] == hashlib.sha256(row["text"].encode()).hexdigest()
    back = stand_in(out)
    assert len(back["text"].split()) == len(row["text"].split())  # all the numbers read of a text
    assert back["error"]["kind"] == kind and back["error"]["status"] == 500


@pytest.mark.unit
@settings(max_examples=150, deadline=None)
@given(secret, st.sampled_from(["scored", "unscored", "error"]), st.booleans())
def test_a_verdict_keeps_its_score_and_flags_and_no_byte_of_its_text(s, status, harmful):
    rec = {"type": "judgment", "version": 1, "judge": "j", "label": "L1", "question_id": "q1", "status": status,
           "score": 2 if status == "scored" else None, "repaired": False, "prompt_sha256": "b" * 64,
           "fields": {"rationale": s, "score": 2, "harmful": harmful, "quotes": [s]} if status == "scored" else None,
           "error": None if status == "scored" else f"no verdict: {s}",
           "attempts": [{"raw": s, "error": f"parse error near {s}", "finish_reason": "stop", "repaired": False},
                        {"raw": None, "error": {"kind": "timeout", "message": s}}],
           "time": "2026-01-01T00:00:00+00:00", "kind": "single", "rubric": "correctness", "calls": ["c" * 64]}
    out = redact_judgment(rec)
    assert not leaks(out, s)
    keep = ("judge", "label", "question_id", "status", "score", "repaired", "prompt_sha256", "time", "kind", "rubric",
            "calls")
    assert {k: out[k] for k in keep} == {k: rec[k] for k in keep}
    back = stand_in(out)
    if status == "scored":
        assert back["fields"]["harmful"] is harmful and back["fields"]["score"] == 2
    assert back["attempts"][1]["raw"] is None and back["attempts"][1]["error"]["kind"] == "timeout"
