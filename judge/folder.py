"""A results folder holds exactly one registered experiment: bound at its start, locked while written.

binding.json is written (atomically) before the first model call. It records what the folder's
numbers depend on: the sha256 of prereg.toml, the MANIFEST, every question set, the source file of
every glue module and every rubric (TOML + template) and registered chat template used; each arm's
registered settings; the judges and the mode; the scope (arms, --limit); the blinding label key; and,
once judging starts, the head of the amendment chain. A later run into the folder must match every
bound entry, or it is refused (exit 2) naming each difference. The one change allowed is to extend the
scope: more arms, or a larger --limit (the first N questions of unchanged sets, so the old ones stay a
prefix). Labels come from the experiment's seed and name, never from the scope, so an answer keeps
its label, its blinding key and its verdicts when the run is extended: each is written once.

The lock (flock on run.lock, released by the kernel when the process ends, however it ends) makes a
second concurrent run into the folder refuse at once, naming the holder written inside the file.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import importlib
import json
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from arms import jsonl
from arms.atomic import write_text
from arms.crash import PARENT_ENV
from arms.errors import BadInput
from arms.glue import glue_file
from arms.load import chat_template
from registration.prereg import Experiment
from registration.seal import manifest_sha256, verify_amendments

BINDING = "binding.json"
LOCK = "run.lock"
# files a run writes: a folder holding any of them but no binding.json was written before folders were bound
WRITTEN = ("answers.jsonl", "blinding.jsonl", "judgments.jsonl", "run.json")


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextmanager
def locked(run_dir: Path) -> Iterator[None]:
    """Hold the folder's exclusive lock for the block; a second holder is refused at once, named."""
    path = Path(run_dir) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "{}"
            try:
                h = json.loads(holder)
                who = f"pid {h.get('pid')} on host {h.get('host')}, started {h.get('started')}"
            except json.JSONDecodeError:
                who = holder
            raise BadInput(path, f"another `judge run` is writing this results folder ({who}); wait for it to "
                           "finish, or pick another folder with --out") from None
        os.ftruncate(fd, 0)
        # the pid of the command the user started (the crash supervisor's, whose death ends this process too)
        pid = int(os.environ.get(PARENT_ENV, os.getpid()))
        os.pwrite(fd, json.dumps({"pid": pid, "worker_pid": os.getpid(), "host": socket.gethostname(),
                                  "started": now()}).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def label_key(exp: Experiment) -> str:
    """The text whose sha256 keys the blinding labels: the experiment's seed and name, never the run's scope."""
    return f"blinding:{exp.seed}:{exp.name}"


def glue_source(import_path: str, exp_dir: Path) -> Path:
    """The source file of a glue: the file in the experiment folder, or the module imported as the run will."""
    file, module_name = exp_dir / "prereg.toml", import_path.partition(":")[0]
    path = glue_file(import_path, exp_dir)
    if path is not None:
        return path
    try:
        source = importlib.import_module(module_name).__file__
    except ImportError as e:
        raise BadInput(file, f"glue {import_path!r} cannot be imported: {e}", field="glue") from None
    if not source or not source.endswith(".py"):
        raise BadInput(file, f"glue {import_path!r} has no Python source file to hash ({source})", field="glue")
    return Path(source).resolve()


def registration(exp: Experiment, arms: list[str], panel: list, mode: str, rubrics: dict) -> dict[str, str]:
    """Every bound entry, by a name that says what it is: sha256 of a file, or a registered setting."""
    out = {"prereg.toml sha256": _sha(exp.dir / "prereg.toml"), "MANIFEST sha256": manifest_sha256(exp.dir)}
    for path in exp.set_paths():
        out[f"set {path.relative_to(exp.dir.resolve()).as_posix()} sha256"] = _sha(path)
    for a in exp.arms:
        spec = {"model": a.model, "quants": list(a.quants), "adapters": list(a.adapters), "glue": a.glue,
                "samples": a.samples, **{f"generation.{k}": v for k, v in asdict(a.generation).items()}}
        out.update({f"arm {a.name!r} {k}": json.dumps(v) for k, v in spec.items()})
    for glue in sorted({exp.arm(a).glue for a in arms if exp.arm(a).glue}):
        src = glue_source(glue, exp.dir)
        out[f"glue {glue} source sha256"] = _sha(src)
    for (_, kind), r in sorted(rubrics.items()):
        out[f"rubric {r.name} ({kind}; TOML and template) sha256"] = r.sha256
    models = {exp.arm(a).model for a in arms} | {j.model for j in panel}
    for m in sorted(models):
        text, _ = chat_template(exp.models[m], exp.dir)
        if text is not None:
            out[f"chat template of model {m!r} sha256"] = hashlib.sha256(text.encode()).hexdigest()
    out["judges"] = ",".join(j.name for j in panel)
    out["judge mode"] = mode
    return out


def _read(run_dir: Path) -> dict[str, Any] | None:
    path = run_dir / BINDING
    if not path.exists():
        return None
    try:
        doc = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise BadInput(path, f"not valid JSON: {e}") from None
    for key in ("registration", "scope", "label_key"):
        if key not in doc:
            raise BadInput(path, "missing", field=key)
    return doc


def _write(run_dir: Path, doc: dict[str, Any]) -> None:
    write_text(run_dir / BINDING, json.dumps(doc, indent=1) + "\n")


def _short(v: str) -> str:
    return f"{v[:12]}…" if len(v) == 64 else v


def bind(run_dir: Path, exp: Experiment, arms: list[str], limit: int | None, panel: list, mode: str,
         rubrics: dict) -> dict[str, Any]:
    """The folder's binding for this run: a new one, the bound one resumed, or the bound one extended.

    Refuses (BadInput, exit 2) a folder bound to anything else, naming every difference, and a folder
    written before binding existed. Nothing is written here: `commit` writes it before the first call.
    """
    run_dir = Path(run_dir)
    path = run_dir / BINDING
    reg = registration(exp, arms, panel, mode, rubrics)
    scope = {"arms": arms, "limit": limit}
    bound = _read(run_dir)
    if bound is None:
        written = [n for n in WRITTEN if (run_dir / n).exists()]
        if written:
            raise BadInput(path, f"this results folder holds {', '.join(written)} but no {BINDING}: it was written "
                           "before results folders were bound to one registration, so a new run cannot tell what "
                           "it holds. It still reads and verifies; pick another folder with --out")
        return {"schema": 1, "created": now(), "experiment": exp.name, "experiment_dir": str(exp.dir),
                "label_key": label_key(exp), "registration": reg, "scope": scope, "amendments": None,
                "history": [{"time": now(), **scope}]}
    problems = []
    for k, v in bound["registration"].items():
        if k not in reg:
            problems.append(f"{k}: bound {_short(v)}, absent now")
        elif reg[k] != v:
            problems.append(f"{k}: bound {_short(v)}, now {_short(reg[k])}")
    if bound["label_key"] != label_key(exp):
        problems.append(f"blinding label key: bound {bound['label_key']!r}, now {label_key(exp)!r}")
    old = bound["scope"]
    dropped = [a for a in old["arms"] if a not in arms]
    if dropped:
        problems.append(f"arms: bound {','.join(old['arms'])}; this run leaves out {','.join(dropped)} (a run may "
                        "add arms to a folder, not drop them)")
    narrower = limit is not None and (old["limit"] is None or limit < old["limit"])
    if narrower:
        problems.append(f"--limit: bound {old['limit'] or 'none (every question)'}, now {limit} (a run may raise "
                        "the limit of a folder, not lower it)")
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        raise BadInput(path, f"this results folder is bound to another registration or run: {shown}. Resume it "
                       "exactly as bound (or with more arms or a larger --limit), or pick another folder with --out")
    out = {**bound, "registration": {**bound["registration"], **reg}, "scope": scope}
    if scope != old:
        out["history"] = [*bound.get("history", []), {"time": now(), **scope}]
    findings = amendment_findings(exp.dir, out) if _judging_began(run_dir) else []
    if findings:
        first = findings[0]
        raise BadInput(exp.dir / "amendments.jsonl", first["message"], line=first["line"], field=first["field"])
    return out


def _judging_began(run_dir: Path) -> bool:
    path = Path(run_dir) / "judgments.jsonl"
    return path.exists() and any(True for _ in jsonl.read(path))


def commit(run_dir: Path, doc: dict[str, Any]) -> None:
    """Write the binding if it is new or changed (before any call of this run)."""
    if _read(Path(run_dir)) != doc:
        _write(Path(run_dir), doc)


def chain_head(exp_dir: Path) -> dict[str, Any]:
    rows = verify_amendments(exp_dir)
    head = hashlib.sha256(jsonl.dumps(rows[-1]).encode()).hexdigest() if rows else manifest_sha256(exp_dir)
    return {"count": len(rows), "head": head}


def start_judging(run_dir: Path, doc: dict[str, Any], exp: Experiment) -> dict[str, Any]:
    """Bind the amendment chain as it stands when judging starts (while no verdict exists yet)."""
    if _judging_began(run_dir):
        return doc
    doc = {**doc, "amendments": chain_head(exp.dir)}
    commit(run_dir, doc)
    return doc


def amendment_findings(exp_dir: Path, doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Amendments that cannot govern this folder: the chain bound when judging began was rewritten, or an
    amendment was appended after it without being marked post hoc. Each names file line and field."""
    bound = doc.get("amendments")
    if not bound:
        return []
    rows = verify_amendments(exp_dir)
    n = bound["count"]
    head = hashlib.sha256(jsonl.dumps(rows[n - 1]).encode()).hexdigest() if 0 < n <= len(rows) else \
        manifest_sha256(exp_dir) if n == 0 else None
    if head != bound["head"]:
        return [{"line": min(n, len(rows)) or None, "field": "prev",
                 "message": f"the amendment chain was rewritten after judging began in this results folder: "
                            f"{BINDING} binds its first {n} amendment(s) to head {bound['head'][:12]}…, the chain "
                            f"now holds {len(rows)} whose first {n} do not hash to it"}]
    return [{"line": i, "field": "date",
             "message": f"amendment {i} (dated {r['date']}) was added to the chain after judging began in this "
                        f"results folder ({BINDING} binds the first {n}), and is not marked post hoc: it cannot "
                        "govern this run, whatever its date (record it with `judge amend --post-hoc`)"}
            for i, r in enumerate(rows[n:], start=n + 1) if not r.get("post_hoc")]


def read_binding(run_dir: Path) -> dict[str, Any] | None:
    """The folder's binding.json, checked for its required entries; None in a folder written before binding."""
    return _read(Path(run_dir))


def binding_findings(run_dir: Path, exp: Experiment, now: dict[str, str], unchecked: frozenset[str] = frozenset(),
                     late: set[int] = frozenset()) -> list[str]:
    """verify's check of a bound folder: every bound entry (`registration`, as `now` computes it from the experiment
    folder, but the `unchecked` ones verify cannot compute here), and whether its amendments may govern it (the
    `late` ones, already named by the date rule, are not named twice)."""
    doc = _read(Path(run_dir))
    if doc is None:
        return []  # written before folders were bound: verify names that
    out = []
    bound = doc["registration"]
    for k in sorted((set(bound) | set(now)) - set(unchecked)):
        if bound.get(k) != now.get(k):
            out.append(f"{BINDING}: {k}: bound {_short(str(bound.get(k)))}, the experiment folder gives "
                       f"{_short(str(now.get(k)))}: these results were not produced from this experiment as sealed")
    try:
        findings = amendment_findings(exp.dir, doc)
    except BadInput:
        findings = []  # a broken chain: verify's seal and chain checks name it
    for p in (p for p in findings if p["field"] != "date" or p["line"] not in late):
        out.append(f"amendments: {exp.dir / 'amendments.jsonl'}:{p['line']}: field {p['field']!r}: {p['message']}")
    return out
