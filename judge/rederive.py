"""`judge verify` from the rawest evidence: every derived field of the raw files re-derived.

numbers.json is recomputed from answers.jsonl, blinding.jsonl and judgments.jsonl elsewhere in
judge.verify; this module checks those files against what produced them, with the product's own code
(so a change to how a run blinds, renders or parses is followed here):
- every verdict (status, score, fields, repaired, each attempt's parse error) by re-parsing the judge's
  stored raw replies (`attempts[].raw`) with the registered parser, judge.verdict;
- every judge prompt rendered again from the answer's text, the question, the rubric and the registered
  scrub patterns (judge.blinding, judge.pairwise, judge.judging) and hashed against `prompt_sha256`; and,
  where run.json records the judge's identity, each attempt's call key against `calls`;
- every blinding key re-derived from the registered seed and the run's name;
- every answer row's settings, read-back settings and model file against the registration;
- where the call cache the run wrote to (run.json `call_cache`) is on this machine and holds a stored call,
  the stored reply against the cached one.
Each finding names the file, the line and the field.

Out of reach: a forger who rewrites the judge's raw replies and everything derived from them
consistently, on a machine without the call cache. The anchor against that is `raw_digest` in
numbers.json and the report, recorded somewhere the forger cannot reach.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from arms import jsonl
from arms.cache import CallCache, cache_dir, call_key
from arms.questions import Question
from arms.records import ANSWER_KEY, AnswerRow, judgment_kind, row_id
from arms.settings import differences
from registration.prereg import Experiment, rubric_dir

from .blinding import blind, label_secret
from .judging import build_request, prompt_sha256
from .pairwise import pair_items
from .rubric import Rubric, load_rubric
from .verdict import parse_verdict


def rederive(run_dir: Path, run: dict[str, Any], exp: Experiment, questions: list[Question]) -> list[str]:
    """Every mismatch between the raw files and what re-derives them, one line each."""
    run_dir = Path(run_dir)
    answers_path = run_dir / "answers.jsonl"
    current = jsonl.current(answers_path, ANSWER_KEY, make=AnswerRow.from_dict)
    line_of = {c.record.row: c.line for c in current.values()}
    wanted = set(run["question_ids"])
    qmap = {q.id: q for q in questions if q.id in wanted}
    answers = [c.record for c in current.values() if c.record.arm in run["arms"] and c.record.question_id in qmap]
    # the cache this run wrote to (run.json `call_cache`): llama.cpp can give another reply to the same request
    # after another history of prompt-cache reuse, so another cache may hold another, equally honest, reply
    cache_file = Path(run["call_cache"]) if run.get("call_cache") else cache_dir() / "calls.sqlite"
    cache = CallCache(cache_file) if cache_file.exists() else None
    try:
        problems = answer_rows(answers_path, run, exp, cache)
        prompts, blind_problems = blinding(run_dir, run, exp, answers, qmap, line_of)
        problems += blind_problems
        problems += verdicts(run_dir, run, exp, prompts, cache)
    finally:
        if cache:
            cache.close()
    return problems


def answer_rows(path: Path, run: dict[str, Any], exp: Experiment, cache: CallCache | None) -> list[str]:
    """Each answer record (superseded error records too) against the registration and the call cache."""
    out: list[str] = []
    arms = {a.name: a for a in exp.arms}
    registered = {a.name: a.generation.to_dict() for a in exp.arms}
    for no, rec in jsonl.read(path):
        def finding(field: str, message: str, no: int = no) -> None:
            out.append(f"{path}:{no}: field {field!r}: {message}")

        arm = arms.get(rec.get("arm"))
        if arm is None:
            finding("arm", f"{rec.get('arm')!r} is not an arm of the registration ({', '.join(arms)})")
            continue
        quant, sample = rec.get("quant"), rec.get("sample")
        if quant not in arm.quants:
            finding("quant", f"{quant!r} is not a registered quant of arm {arm.name!r} ({', '.join(arm.quants)})")
        if not (type(sample) is int and 0 <= sample < arm.samples):
            finding("sample", f"{sample!r} is not one of the {arm.samples} registered sample(s) of arm {arm.name!r}")
            continue
        if rec.get("row") != row_id(arm.name, quant, rec.get("question_id"), sample):
            finding("row", f"{rec.get('row')!r} is not the id of ({arm.name}, {quant}, {rec.get('question_id')}, "
                    f"sample {sample})")
        seed = None if arm.generation.seed is None else arm.generation.seed + sample
        want = {**registered[arm.name], "seed": seed}
        got = rec.get("settings") or {}
        for key in sorted(set(want) | set(got), key=str):
            if want.get(key) != got.get(key):
                finding(f"settings.{key}", f"reads {got.get(key)!r}, but arm {arm.name!r} is registered with "
                        f"{want.get(key)!r}")
        eff = rec.get("effective")
        if eff:
            model = exp.models[arm.model]
            adapters = tuple(exp.adapters[a] for a in arm.adapters)
            try:
                diffs = differences(replace(arm.generation, seed=seed), quant, model, adapters, exp.runtime, eff,
                                    eff.get("sent") or {})
            except (KeyError, TypeError) as e:
                diffs = [f"the read-back settings lack {e} to compare with the registration"]
            for d in diffs:
                finding("effective", f"differs from the registration of arm {arm.name!r} at {quant}: {d}")
            if "model_sha256" in eff and rec.get("model_sha256") != eff["model_sha256"]:
                finding("model_sha256", f"reads {rec.get('model_sha256')!r}, but the model file read back for this "
                        f"row (field 'effective') is {eff['model_sha256']!r}")
            qf = (run.get("quant_files") or {}).get(f"{arm.model}/{quant}")
            if qf and qf.get("sha256") and rec.get("model_sha256") != qf["sha256"]:
                finding("model_sha256", f"reads {rec.get('model_sha256')!r}, but run.json records the file of "
                        f"{arm.model}/{quant} as {qf['sha256']!r}")
        if rec.get("status") != "ok":
            continue
        if not arm.glue and rec.get("text") != rec.get("raw_output"):
            finding("text", f"arm {arm.name!r} has no glue, so its answer is the model's reply, but the text "
                    "differs from the reply recorded in field 'raw_output'")
        calls = rec.get("calls") or []
        reply = cache.get(calls[-1]) if cache and calls else None
        if reply is not None and reply.text != rec.get("raw_output"):
            finding("raw_output", f"differs from the model's reply held in the call cache ({cache.path}) under "
                    f"this row's last call {calls[-1][:12]}…")
    return out


def blinding(run_dir: Path, run: dict[str, Any], exp: Experiment, answers: list[AnswerRow],
             qmap: dict[str, Question], line_of: dict[str, int]) -> tuple[dict[str, tuple[Any, str]], list[str]]:
    """Re-derive every blinding key from the registered seed with judge run's own code; compare with
    blinding.jsonl. Returns label -> (the item the judge was shown, where its answer text is), and findings."""
    path, answers_path = run_dir / "blinding.jsonl", run_dir / "answers.jsonl"
    stored = list(jsonl.read(path))
    secret = label_secret(run.get("label_key") or f"blinding:{exp.seed}:{run['name']}")  # older folders: run name
    mode = run["judge"].get("mode", "single")
    items, keys = blind(answers, qmap, secret, exp.seed, exp.scrub)
    pitems, pkeys = [], []
    if mode != "single" or any(rec.get("type") == "pair" for _, rec in stored):
        hyps = [h for h in exp.hypotheses if h.a in run["arms"] and h.b in run["arms"]]
        pitems, pkeys = pair_items(hyps, answers, qmap, secret, exp.seed, exp.scrub)
    derived = {k.label: k.to_dict() for k in [*keys, *pkeys]}
    rows = {(a.arm, a.quant, a.question_id): a.row for a in answers if a.sample == 0}
    where: dict[str, str] = {k.label: f"{answers_path}:{line_of[k.row]}" for k in keys}
    for k in pkeys:
        lines = [line_of[rows[(arm, k.quant, k.question_id)]] for arm in (k.first, k.second)]
        where[k.label] = f"{answers_path}:{lines[0]} and :{lines[1]}"
    out: list[str] = []
    seen: dict[str, int] = {}
    for no, rec in stored:
        label = rec.get("label")
        if label in seen:
            out.append(f"{path}:{no}: field 'label': {label!r} is already keyed at line {seen[label]}")
            continue
        seen[label] = no
        want = derived.get(label)
        if want is None:
            out.append(f"{path}:{no}: field 'label': {label!r} does not derive from any answer of this run under the "
                       f"registered seed {exp.seed} and run name {run['name']!r}")
            continue
        for field, value in want.items():
            if field in rec and rec[field] != value:
                out.append(f"{path}:{no}: field {field!r}: reads {rec[field]!r}, but the key re-derived from "
                           f"{where[label]} gives {value!r}")
    wanted = ([*keys] if mode != "pairwise" else []) + ([*pkeys] if mode != "single" else [])
    for k in wanted:
        if k.label not in seen:
            out.append(f"{path}: field 'label': {k.label} (from {where[k.label]}) is missing: judge run writes a "
                       "key for every answer it blinds")
    return {i.label: (i, where[i.label]) for i in [*items, *pitems]}, out


def _reparse(attempts: list[dict], rubric: Rubric, finding) -> dict[str, Any]:
    """The verdict the stored raw replies give under the registered parser (judge.judging's rule: the first
    attempt that parses is scored; a failed call ends in `error`; else `unscored`)."""
    for i, a in enumerate(attempts):
        raw = a.get("raw")
        if raw is None:
            return {"status": "error", "score": None, "fields": None, "repaired": False}
        parsed = parse_verdict(raw, rubric.schema)
        if a.get("error") != parsed.error:
            finding(f"attempts[{i}].error", f"reads {a.get('error')!r}, but the registered parser gives "
                    f"{parsed.error!r} for attempts[{i}].raw")
        if bool(a.get("repaired")) != parsed.repaired:
            finding(f"attempts[{i}].repaired", f"reads {a.get('repaired')!r}, but the registered parser gives "
                    f"{parsed.repaired!r} for attempts[{i}].raw")
        if parsed.ok:
            if i != len(attempts) - 1:
                finding("attempts", f"attempt {i} already parses to a verdict, yet {len(attempts) - 1 - i} more follow")
            return {"status": "scored", "score": int(parsed.fields[rubric.score_field]), "fields": parsed.fields,
                    "repaired": parsed.repaired, "from": f"attempts[{i}].raw"}
    return {"status": "unscored", "score": None, "fields": None, "repaired": False}


def verdicts(run_dir: Path, run: dict[str, Any], exp: Experiment, prompts: dict[str, tuple[Any, str]],
             cache: CallCache | None) -> list[str]:
    """Each judgment record (superseded error records too): its verdict re-parsed from its raw replies, its
    prompt re-rendered, its call keys re-derived, its raw replies against the call cache."""
    path = run_dir / "judgments.jsonl"
    out: list[str] = []
    rubrics = {kind: load_rubric(name, rubric_dir(name, exp.dir))  # by the verdict's kind, never by its rubric's name
               for kind, name in (("single", exp.rubric), ("pairwise", "pairwise"))}
    for r in rubrics.values():
        recorded = (run.get("hashes") or {}).get(f"rubric {r.name}")
        if recorded and recorded != r.sha256:
            out.append(f"{run_dir / 'run.json'}: field 'hashes': rubric {r.name} was {recorded[:12]}… when the run "
                       f"was judged and is {r.sha256[:12]}… now ({r.path}): verdicts are re-checked against the "
                       "rubric as it is now")
    judges = {j.name: j for j in exp.judges}
    identities = run["judge"].get("identities") or {}
    for no, j in jsonl.read(path):
        def finding(field: str, message: str, no: int = no) -> None:
            out.append(f"{path}:{no}: field {field!r}: {message}")

        rubric = rubrics.get(judgment_kind(j))
        spec = judges.get(j.get("judge"))
        if rubric is None:
            finding("kind", f"reads {judgment_kind(j)!r}, neither 'single' nor 'pairwise'")
            continue
        if spec is None:
            finding("judge", f"names {j.get('judge')!r}, which this registration does not have")
            continue
        attempts = j.get("attempts") or []
        want = _reparse(attempts, rubric, finding)
        for field in ("status", "score", "fields", "repaired"):
            if j.get(field) != want[field]:
                finding(field, f"reads {j.get(field)!r}, but the judge's raw reply ({want.get('from', 'attempts')}) "
                        f"gives {want[field]!r} under the registered parser")
        raws = [a["raw"] for a in attempts if a.get("raw") is not None]
        calls = j.get("calls") or []
        shown = prompts.get(j.get("label"))
        if shown is None:
            finding("label", f"{j.get('label')!r} is not the label of any answer of this run (re-derived from the "
                    "registered seed)")
        else:
            item, source = shown
            if item.kind != judgment_kind(j):
                finding("kind", f"reads {judgment_kind(j)!r}, but label {item.label} is a {item.kind} item")
                continue
            jrubric = spec.rubric(rubric)
            if j.get("question_id") != item.question_id:
                finding("question_id", f"reads {j.get('question_id')!r}, but label {item.label} is an answer to "
                        f"{item.question_id!r}")
            sha = prompt_sha256(build_request(jrubric, item, 0))
            if j.get("prompt_sha256") != sha:
                finding("prompt_sha256", f"reads {str(j.get('prompt_sha256'))[:12]}…, but the prompt re-rendered from "
                        f"{source} (field 'text'), the question, rubric {rubric.name} and the scrub patterns hashes "
                        f"to {sha[:12]}…")
            ident = identities.get(spec.name)
            if ident:
                keys = [call_key(ident, build_request(jrubric, item, k)) for k, a in enumerate(attempts)
                        if a.get("raw") is not None]
                for i, (stored, derived) in enumerate(zip(calls, keys, strict=False)):
                    if stored != derived:
                        finding(f"calls[{i}]", f"reads {str(stored)[:12]}…, but the call re-derived from {source} "
                                f"(field 'text'), the question, rubric {rubric.name} and the judge's identity in "
                                f"run.json has key {derived[:12]}…")
                        break
                if len(calls) != len(keys):
                    finding("calls", f"holds {len(calls)} call key(s) for {len(keys)} judge repl(ies)")
        for i, (key, raw) in enumerate(zip(calls, raws, strict=False)):
            reply = cache.get(key) if cache else None
            if reply is not None and reply.text != raw:
                finding(f"attempts[{i}].raw", f"differs from the judge's reply held in the call cache ({cache.path}) "
                        f"under calls[{i}] {key[:12]}…")
    return out
