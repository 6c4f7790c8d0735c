"""`judge verify` from the rawest evidence: every derived field of the raw files re-derived, and the folder
checked complete against the scope its binding registered.

numbers.json is recomputed from answers.jsonl, blinding.jsonl and judgments.jsonl elsewhere in
judge.verify.checks; this module checks those files against what produced them, with the product's own code
(so a change to how a run blinds, renders or parses is followed here):
- completeness: every cell binding.json registers (arm x quant x question x sample) has a current answer row
  (an answer or an error), and every blinded item one current verdict of each bound judge;
- every verdict of judgments.jsonl and of retests.jsonl (status, score, fields, repaired, each attempt's parse
  error) by re-parsing the judge's stored raw replies (`attempts[].raw`) with the registered parser,
  judge.judging.verdict;
- every judge prompt rendered again from the answer's text, the question, the rubric and the registered
  scrub patterns (judge.judging.blinding, judge.judging.pairwise, judge.judging.calls) and hashed against
  `prompt_sha256`; each attempt's call key re-derived from that prompt and the judge's identity in run.json, itself
  compared with the registration;
- every blinding key re-derived from the folder's blinding secret (arms.folder; the label key in folders bound
  before blinding secrets, said as unchecked: anyone can derive those labels);
- every answer row's settings, read-back settings, model file and backend identity against the registration,
  and its call keys re-derived from its request (a glue arm's by running its registered glue again on the
  recorded replies, whose final answer must be the row's);
- against the call caches verify is given (never a location the folder names): every recorded call key must
  be there, since a run stores each call before writing its record, and each stored reply must be the cached one.
Each finding names the file, the line and the field; what could not be checked is returned too, never skipped
silently.

Out of reach: a forger who rewrites the judge's raw replies and everything derived from them
consistently, without the call cache. The anchor against that is judge.results.files.anchor, recorded somewhere
the forger cannot reach.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from arms.folder import BINDING, blinding_secret, read_binding
from core import jsonl
from core.errors import BadInput
from core.records import ANSWER_KEY, AnswerRow, judgment_kind
from models.cache import call_key
from registration.prereg import Experiment
from registration.questions import Question
from registration.rubric import Rubric, load_rubric, rubric_dir

from ..judging import answer_first
from ..judging.blinding import blind, folder_label_secret, label_secret
from ..judging.calls import RETESTS, build_request, prompt_sha256
from ..judging.pairwise import pair_items
from ..judging.verdict import parse_verdict
from ..results.runinfo import Scope
from .answers import answer_rows, expected_identity, identity_findings, missing_answers
from .replies import Replies


def rederive(run_dir: Path, run: dict[str, Any], exp: Experiment, questions: list[Question], scope: Scope,
             replies: Replies, secret_withheld: bool = False) -> tuple[list[str], list[str]]:
    """Every mismatch between the raw files and what re-derives them, one line each; and what could not be
    checked. `run` is run.json with its registered part taken from the binding and the registration
    (judge.verify.checks), `scope` what binding.json registered. `secret_withheld`: the folder is a published bundle's,
    which never holds the blinding secret: its labels are not re-derived (noted, not a finding)."""
    run_dir = Path(run_dir)
    answers_path = run_dir / "answers.jsonl"
    current = jsonl.current(answers_path, ANSWER_KEY, make=AnswerRow.from_dict)
    line_of = {c.record.row: c.line for c in current.values()}
    wanted = set(scope.question_ids)
    qmap = {q.id: q for q in questions if q.id in wanted}
    answers = [c.record for c in current.values() if c.record.arm in scope.arms and c.record.question_id in qmap]
    problems, unchecked = answer_rows(answers_path, run, exp, {q.id: q for q in questions}, replies)
    problems += missing_answers(answers_path, exp, scope, {a.row for a in answers})
    secret, blind_problems, blind_unchecked = label_derivation(run_dir, scope, secret_withheld)
    prompts, wanted_labels, found = blinding(run_dir, scope, exp, answers, qmap, line_of, secret)
    problems += blind_problems + found
    unchecked += blind_unchecked
    problems += verdicts(run_dir, run, exp, scope, prompts, replies)
    problems += missing_verdicts(run_dir, scope, prompts, wanted_labels)
    for j in scope.panel:
        if expected_identity(exp.models[j.model], (), exp.runtime, {}) is None:
            unchecked.append(f"{run_dir / 'run.json'}: the identity of judge {j.name!r} (backend "
                             f"{exp.models[j.model].backend!r}) is not one verify knows: not compared with the "
                             "registration")
    return problems, unchecked


def missing_verdicts(run_dir: Path, scope: Scope, prompts: dict[str, tuple[Any, str]],
                     wanted: list[str]) -> list[str]:
    """Every blinded item the bound mode judges without a current verdict of each bound judge, named."""
    path = run_dir / "judgments.jsonl"
    have = {(j.get("judge"), j.get("label")) for _, j in jsonl.read(path)}
    out = []
    for judge in scope.panel:
        for label in wanted:
            if (judge.name, label) not in have:
                item, source = prompts[label]
                out.append(f"{path}: no verdict of judge {judge.name!r} for label {label} ({item.kind}, question "
                           f"{item.question_id!r}, the answer at {source}): binding.json registers this judge, and "
                           "every blinded answer has one current verdict of each judge")
    return out


def label_derivation(run_dir: Path, scope: Scope, withheld: bool) -> tuple[bytes | None, list[str], list[str]]:
    """The key the folder's labels re-derive from (judge.judging.blinding.folder_label_secret), with the findings and
    notes on it: None when it cannot be had (the secret missing or not the one binding.json binds: a finding; withheld
    from a published bundle: a note), and the labels are then taken as blinding.jsonl keys them."""
    doc = read_binding(run_dir)
    if doc is None or doc.blinding_secret_sha256 is None:
        return label_secret(scope.label_key), [], [
            f"{run_dir / 'blinding.jsonl'}: the labels derive from the label key {scope.label_key!r} (the folder was "
            "bound before blinding secrets): re-derived from it, but anyone holding the registration can derive them "
            "too, so this folder was not blind to a reader of its blind page or its published rows"]
    if withheld:
        return None, [], [f"{run_dir / 'blinding.jsonl'}: the labels were not re-derived: they derive from the "
                          f"results folder's blinding secret, which a published bundle never holds ({BINDING} binds "
                          "its sha256, and the anchor covers blinding.jsonl)"]
    try:
        return folder_label_secret(blinding_secret(run_dir, doc), scope.label_key), [], []
    except BadInput as e:
        return None, [f"{e}: the labels of blinding.jsonl and judgments.jsonl were not re-derived"], []


def _kind(rec: dict[str, Any]) -> str:
    """A blinding.jsonl record's type, read as core.records reads it."""
    return rec.get("type") or ("pair" if "hypothesis" in rec else "blinding")


def _secret_bound(run_dir: Path) -> bool:
    doc = read_binding(run_dir)
    return doc is not None and doc.blinding_secret_sha256 is not None


def blinding(run_dir: Path, scope: Scope, exp: Experiment, answers: list[AnswerRow], qmap: dict[str, Question],
             line_of: dict[str, int], secret: bytes | None) -> tuple[dict[str, tuple[Any, str]], list[str], list[str]]:
    """Re-derive every blinding key from the folder's key (`secret`, `label_derivation`) with judge run's own code;
    compare with blinding.jsonl. Returns label -> (the item the judge was shown, where its answer text is), the labels
    the bound mode judges, and findings. Without the key (None) the labels are read as blinding.jsonl keys them and
    the rest (rows, counts, completeness, the prompts) is re-derived all the same."""
    path, answers_path = run_dir / "blinding.jsonl", run_dir / "answers.jsonl"
    stored = list(jsonl.read(path))
    mode = scope.mode
    singles = pairs = None
    if secret is None:
        singles = {r.get("row"): r.get("label") for _, r in stored if _kind(r) == "blinding"}
        pairs = {(r.get("hypothesis"), r.get("question_id"), r.get("first")): r.get("label") for _, r in stored
                 if _kind(r) == "pair"}
    items, keys = blind(answers, qmap, secret or b"", exp.seed, exp.scrub, labels=singles)
    pitems, pkeys = [], []
    if mode != "single" or any(_kind(rec) == "pair" for _, rec in stored):
        hyps = [h for h in exp.hypotheses if h.a in scope.arms and h.b in scope.arms]
        pitems, pkeys = pair_items(hyps, answers, qmap, secret or b"", exp.seed, exp.scrub, labels=pairs)
    derived = {k.label: k.to_dict() for k in [*keys, *pkeys]}
    rows = {(a.arm, a.quant, a.question_id): a.row for a in answers if a.sample == 0}
    where: dict[str, str] = {k.label: f"{answers_path}:{line_of[k.row]}" for k in keys}
    for k in pkeys:
        lines = [line_of[rows[(arm, k.quant, k.question_id)]] for arm in (k.first, k.second)]
        where[k.label] = f"{answers_path}:{lines[0]} and :{lines[1]}"
    under = "the folder's blinding secret" if _secret_bound(run_dir) else f"the label key {scope.label_key!r}"
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
            out.append(f"{path}:{no}: field 'label': {label!r} does not derive from any answer of this run under "
                       f"{under}")
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
    return {i.label: (i, where[i.label]) for i in [*items, *pitems]}, [k.label for k in wanted], out


def _reparse(attempts: list[dict], rubric: Rubric, finding) -> dict[str, Any]:
    """The verdict the stored raw replies give under the registered parser (judge.judging.calls's rule: the first
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


def judge_identities(run: dict[str, Any], exp: Experiment, scope: Scope, run_json: Path) -> list[str]:
    """Each bound judge's identity in run.json (what its verdicts' call keys are re-derived with) against the
    registration and the settings read back from it: run.json names it, the registration decides it."""
    out = []
    recorded = run["judge"].get("identities") or {}
    effective = run["judge"].get("effective_settings") or {}
    for j in scope.panel:
        where = f"{run_json}: field 'judge.identities.{j.name}"
        ident = recorded.get(j.name)
        if not isinstance(ident, dict):
            out.append(f"{where}': reads {ident!r}: no backend identity of judge {j.name!r}, so its verdicts' call "
                       "keys cannot be re-derived")
            continue
        eff = next((v for k, v in effective.items() if k.partition("/")[0] == j.name and isinstance(v, dict)), {})
        for field, message in identity_findings(ident, exp.models[j.model], j.quant, (), exp.runtime, eff) or []:
            out.append(f"{where}.{field.removeprefix('identity.')}': {message} (judge {j.name!r})")
        qf = (run.get("quant_files") or {}).get(f"{j.model}/{j.quant or 'source'}") or {}
        if "model_sha256" in ident and qf.get("sha256") and ident["model_sha256"] != qf["sha256"]:
            out.append(f"{where}.model_sha256': reads {ident['model_sha256']!r}, but run.json records the file of "
                       f"{j.model}/{j.quant or 'source'} as {qf['sha256']!r}")
    return out


def verdicts(run_dir: Path, run: dict[str, Any], exp: Experiment, scope: Scope, prompts: dict[str, tuple[Any, str]],
             replies: Replies) -> list[str]:
    """Each judgment record of judgments.jsonl and each retest record of retests.jsonl (superseded error records
    too): its verdict re-parsed from its raw replies, its prompt re-rendered, its call keys re-derived (a retest's
    with its retest number, judge.judging.calls.build_request), its calls and raw replies against the call cache."""
    out = judge_identities(run, exp, scope, run_dir / "run.json")
    for path in (run_dir / "judgments.jsonl", run_dir / RETESTS):
        out += _verdict_file(path, run, exp, scope, prompts, replies)
    return out


def _verdict_file(path: Path, run: dict[str, Any], exp: Experiment, scope: Scope,
                  prompts: dict[str, tuple[Any, str]], replies: Replies) -> list[str]:
    """`verdicts` for one file (none when it does not exist: retests.jsonl only exists with `[judge] retest`)."""
    out: list[str] = []
    rubrics = {kind: load_rubric(name, rubric_dir(name, exp.dir))  # by the verdict's kind, never by its rubric's name
               for kind, name in (("single", exp.rubric), ("pairwise", "pairwise"))}
    judges = {j.name: j for j in exp.judges}
    bound = [j.name for j in scope.panel]
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
        if spec.name not in bound:
            finding("judge", f"names {spec.name!r}, which is not one of the judges binding.json binds "
                    f"({', '.join(bound)})")
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
                    "label key the folder bound)")
        else:
            item, source = shown
            if item.kind != judgment_kind(j):
                finding("kind", f"reads {judgment_kind(j)!r}, but label {item.label} is a {item.kind} item")
                continue
            jrubric = spec.rubric(rubric)
            if j.get("question_id") != item.question_id:
                finding("question_id", f"reads {j.get('question_id')!r}, but label {item.label} is an answer to "
                        f"{item.question_id!r}")
            own, found = answer_first.check(j, jrubric, item.question, item.reference, identities.get(spec.name),
                                            replies, f"{path}:{no}", want["fields"])
            for field, message in found:
                finding(field, message)
            sha = prompt_sha256(build_request(jrubric, item, 0, own_answer=own))
            if j.get("prompt_sha256") != sha:
                finding("prompt_sha256", f"reads {str(j.get('prompt_sha256'))[:12]}…, but the prompt re-rendered from "
                        f"{source} (field 'text'), the question, rubric {rubric.name} and the scrub patterns hashes "
                        f"to {sha[:12]}…")
            ident = identities.get(spec.name)
            if isinstance(ident, dict):  # else named once, by judge_identities
                retest = j.get("retest") or 0  # a retest's calls are its own (judge.judging.calls.build_request)
                keys = [call_key(ident, build_request(jrubric, item, k, retest, exp.judge_attempts, own))
                        for k, a in enumerate(attempts) if a.get("raw") is not None]
                for i, (stored, derived) in enumerate(zip(calls, keys, strict=False)):
                    if stored != derived:
                        finding(f"calls[{i}]", f"reads {str(stored)[:12]}…, but the call re-derived from {source} "
                                f"(field 'text'), the question, rubric {rubric.name} and the judge's identity in "
                                f"run.json has key {derived[:12]}…")
                        break
                if len(calls) != len(keys):
                    finding("calls", f"holds {len(calls)} call key(s) for {len(keys)} judge repl(ies)")
        for i, key in enumerate(calls):
            reply = replies.get(key, f"{path}:{no}: field 'calls[{i}]'")
            if reply is not None and i < len(raws) and reply.text != raws[i]:
                finding(f"attempts[{i}].raw", f"differs from the judge's reply held in the call cache under "
                        f"calls[{i}] {str(key)[:12]}…")
    return out
