"""A results folder holds exactly one registered experiment: bound at its start, locked while written.

Both commands that write a results folder, `judge run` and `arms collect`, take its lock and check its
binding before their first model call; judge.results.binding adds what judging binds (the amendment chain).

binding.json is written (atomically) before the first model call. It records what the folder's
numbers depend on: the sha256 of prereg.toml, the MANIFEST, every question set, the source file of
every glue module and every rubric (TOML + template) and registered chat template used; each arm's
registered settings; the judges and the mode; the scope (arms, --limit); the blinding label key; the
sha256 of the folder's blinding secret; and, once judging starts, the head of the amendment chain. A later
run into the folder must match every bound entry, or it is refused (exit 2) naming each difference. The one
change allowed is to extend the scope: more arms, or a larger --limit (the first N questions of unchanged
sets, so the old ones stay a prefix). `arms collect` binds the entries answers depend on (no judges, rubrics
or mode) and checks those; a `judge run` after it adds the rest.

Blinding labels derive from a secret made when the folder is first bound: 32 random bytes in `blinding.secret`
(readable by its owner only), which no registered or published file holds; binding.json records only its sha256,
so the anchor covers it and a swapped secret is seen. Nothing public (the registration, the blind page, run.json,
a published bundle) derives a label. The secret belongs to the folder, never to the scope, so an answer keeps
its label, its blinding key and its verdicts when the run is extended: each is written once. A folder bound
before blinding secrets has none: its labels derive from its label key (the experiment's seed and name, public),
which it keeps, so it still resumes and verifies (`blinding_secret` is None there).

The lock (flock on run.lock, released by the kernel when the process ends, however it ends) makes a
second writer of the folder (`judge run`, `arms collect` or `judge repair`) refuse at once, naming the
holder written inside the file. `repair` (`judge repair`) rewrites the raw files of a folder two writers
wrote at once, before the lock kept them apart, so that every key keeps one history again.
"""
from __future__ import annotations

import datetime as dt
import fcntl
import hashlib
import json
import os
import secrets
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from core import jsonl
from core.atomic import replacing, write_text
from core.crash import PARENT_ENV
from core.errors import BadInput
from core.records import ANSWER_KEY, JUDGMENT_KEY, Binding, BindingScope, ScopeChange
from models.sources import chat_template
from registration.gold import ranked
from registration.prereg import Experiment
from registration.seal import inside, manifest_sha256, sealed_sha256

from .glue import glue_source

# A results folder's files, named once, here at the lowest layer that writes them (judge.results.files names them for
# every reader above): the binding, its lock and blinding secret, the raw files and the run's record
BINDING = "binding.json"
LOCK = "run.lock"
SECRET = "blinding.secret"  # the folder's blinding secret (hex): never registered, rendered nor published
ANSWERS = "answers.jsonl"
BLINDING = "blinding.jsonl"
JUDGMENTS = "judgments.jsonl"
RUN = "run.json"
# files a run writes: a folder holding any of them but no binding.json was written before folders were bound
WRITTEN = (ANSWERS, BLINDING, JUDGMENTS, RUN)


def _sha(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


@contextmanager
def locked(run_dir: Path, command: str) -> Iterator[None]:
    """Hold the folder's exclusive lock for the block; a second holder is refused at once, named with its
    command (`judge run`, `arms collect`, `judge repair`)."""
    path = Path(run_dir) / LOCK
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "{}"
            try:
                h = json.loads(holder)
                by = h.get("command", "judge run")  # only `judge run` locked folders before the command was written
                who = holder_text(h)
            except (json.JSONDecodeError, AttributeError):
                by, who = "command", holder
            raise BadInput(path, f"another `{by}` is writing this results folder ({who}); wait for it to "
                           "finish, or pick another folder with --out") from None
        os.ftruncate(fd, 0)
        # the pid of the command the user started (the crash supervisor's, whose death ends this process too)
        pid = int(os.environ.get(PARENT_ENV, os.getpid()))
        os.pwrite(fd, json.dumps({"command": command, "pid": pid, "worker_pid": os.getpid(),
                                  "host": socket.gethostname(), "started": now()}).encode(), 0)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def holder_text(h: dict[str, Any]) -> str:
    """Who holds the lock, as far as run.lock says: the holder writes it just after taking the lock, so a second
    writer arriving in between reads nothing yet."""
    who = " ".join(p for p in (f"pid {h['pid']}" if h.get("pid") is not None else "",
                               f"on host {h['host']}" if h.get("host") else "") if p)
    when = f"started {h['started']}" if h.get("started") else ""
    return ", ".join(p for p in (who, when) if p) or "it has not written its pid and host yet"


def label_key(exp: Experiment) -> str:
    """The experiment's blinding name, bound and recorded in run.json: the seed and name. Folders bound before
    blinding secrets derive their labels from it (judge.judging.blinding.label_secret); it is public, so it derives no
    label of a folder bound since (`blinding_secret`)."""
    return f"blinding:{exp.seed}:{exp.name}"


def new_secret(run_dir: Path) -> str:
    """Make the folder's blinding secret (32 bytes from the OS's generator), write it to blinding.secret readable by
    its owner only, and return its sha256 (what binding.json records). Called when a folder is first bound."""
    secret = secrets.token_bytes(32)
    path = Path(run_dir) / SECRET
    with replacing(path) as tmp:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # whatever the umask, or a stray file of that name, left
        with os.fdopen(fd, "w") as f:
            f.write(secret.hex() + "\n")
            f.flush()
            os.fsync(f.fileno())
    return hashlib.sha256(secret).hexdigest()


def blinding_secret(run_dir: Path, doc: Binding | None) -> bytes | None:
    """The folder's blinding secret, read from blinding.secret and checked against the sha256 binding.json (`doc`)
    records; None for a folder bound before blinding secrets (or never bound), whose labels derive from its label
    key. Bad input (exit 2, naming the file) when the binding records a secret and the file is missing or another."""
    want = doc.blinding_secret_sha256 if doc else None
    if want is None:
        return None
    path = Path(run_dir) / SECRET
    if not path.is_file():
        raise BadInput(path, f"missing: {BINDING} binds this folder's blinding labels to a secret kept in this file "
                       f"(sha256 {want[:12]}…), and without it no label can be derived or re-derived. Restore it "
                       "from the folder's backup; a published bundle never holds it")
    text = path.read_text(encoding="ascii", errors="replace").strip()
    try:
        secret = bytes.fromhex(text)
    except ValueError:
        secret = b""
    if len(secret) != 32 or hashlib.sha256(secret).hexdigest() != want:
        raise BadInput(path, f"is not the blinding secret {BINDING} binds (sha256 {want[:12]}…): it was replaced or "
                       "damaged, so its labels are not this folder's")
    return secret


def registration(exp: Experiment, arms: list[str], panel: list = (), mode: str | None = None,
                 rubrics: dict | None = None) -> dict[str, str]:
    """Every bound entry, by a name that says what it is: sha256 of a file, or a registered setting. Without a
    panel (`arms collect`), only what the answers depend on: no rubrics, judges' chat templates, judges or mode."""
    out = {"prereg.toml sha256": _sha(exp.dir / "prereg.toml"), "MANIFEST sha256": manifest_sha256(exp.dir)}
    for path in exp.set_paths():  # a private set that is withheld: the sha256 MANIFEST binds it by
        out[f"set {path.relative_to(exp.dir.resolve()).as_posix()} sha256"] = sealed_sha256(exp.dir, path) or _sha(path)
    for a in exp.arms:
        spec = {"model": a.model, "quants": list(a.quants), "adapters": list(a.adapters), "glue": a.glue,
                "samples": a.samples, **{f"generation.{k}": v for k, v in asdict(a.generation).items()}}
        out.update({f"arm {a.name!r} {k}": json.dumps(v) for k, v in spec.items()})
    for glue in sorted({exp.arm(a).glue for a in arms if exp.arm(a).glue}):
        src = glue_source(glue, exp.dir)
        out[f"glue {glue} source sha256"] = _sha(src)
    for (_, kind), r in sorted((rubrics or {}).items()):
        out[f"rubric {r.name} ({kind}; TOML and template) sha256"] = r.sha256
    models = {exp.arm(a).model for a in arms} | {j.model for j in panel}
    for m in sorted(models):
        text, _ = chat_template(exp.models[m], exp.dir)
        if text is not None:
            out[f"chat template of model {m!r} sha256"] = hashlib.sha256(text.encode()).hexdigest()
    if panel:
        out["judges"] = ",".join(j.name for j in panel)
        out["judge mode"] = mode
        out.update(gold_entries(exp))
    return out


def gold_entries(exp: Experiment) -> dict[str, str]:
    """The gold scores' sources a judged folder is bound to (registration.gold: what each registered source binds,
    such as the gold program's source file and each sealed labels file, by sha256). A file that does not exist is
    bound as such; judge run refuses it before paying."""
    out = {}
    if exp.gold is None:
        return out
    file = exp.dir / "prereg.toml"
    registered = dict(exp.gold.values)
    for spec in ranked():
        if spec.name not in registered:
            continue
        for entry, rel in spec.binds(registered[spec.name]):
            out[entry] = sealed_sha256(exp.dir, inside(exp.dir, rel, file, spec.key)) or "missing"
    return out


def read_binding(run_dir: Path) -> Binding | None:
    """The folder's binding.json read through its contract (core.records.Binding: damage is bad input naming file and
    field); None: the folder was written before folders were bound."""
    path = Path(run_dir) / BINDING
    return Binding.read_file(path) if path.exists() else None


def changed(run_dir: Path, doc: Binding, **fields: Any) -> Binding:
    """`doc` with `fields` (plain JSON values) in place, every other key as written: a key it lacked is added last, as
    earlier versions added it, so a binding that does not change keeps its bytes."""
    return Binding.from_dict({**doc.to_dict(), **fields}, Path(run_dir) / BINDING)


def short(v: str) -> str:
    return f"{v[:12]}…" if len(v) == 64 else v


def bind(run_dir: Path, exp: Experiment, arms: list[str], limit: int | None, reg: dict[str, str],
         judging: bool = True) -> Binding:
    """The folder's binding for this run: a new one, the bound one resumed, or the bound one extended.

    Refuses (BadInput, exit 2) a folder bound to anything else, naming every difference, and a folder
    written before binding existed. `judging` False (`arms collect`): bound entries this command does not
    compute (judges, mode, rubrics, judges' chat templates) are kept, not compared. A new binding makes the
    folder's blinding secret (`new_secret`, written here); the binding itself is written by `commit`, before the
    first call. A resumed folder keeps the secret it was bound with, or none (labels from its label key).
    """
    run_dir = Path(run_dir)
    path = run_dir / BINDING
    scope = {"arms": arms, "limit": limit}
    bound = read_binding(run_dir)
    if bound is None:
        written = [n for n in WRITTEN if (run_dir / n).exists()]
        if written:
            raise BadInput(path, f"this results folder holds {', '.join(written)} but no {BINDING}: it was written "
                           "before results folders were bound to one registration, so a new run cannot tell what "
                           "it holds. It still reads and verifies; pick another folder with --out")
        return Binding(schema=1, created=now(), experiment=exp.name, experiment_dir=str(exp.dir),
                             label_key=label_key(exp), blinding_secret_sha256=new_secret(run_dir), registration=reg,
                             scope=BindingScope(**scope), amendments=None,
                             history=[ScopeChange(time=now(), **scope)])
    blinding_secret(run_dir, bound)  # a folder bound with a secret resumes with that one, checked before any call
    problems = []
    for k, v in bound.registration.items():
        if k not in reg:
            if judging:  # without judging, an entry absent now is one only judging computes (dropped arms are named)
                problems.append(f"{k}: bound {short(v)}, absent now")
        elif reg[k] != v:
            problems.append(f"{k}: bound {short(v)}, now {short(reg[k])}")
    if bound.label_key != label_key(exp):
        problems.append(f"blinding label key: bound {bound.label_key!r}, now {label_key(exp)!r}")
    old = bound.scope
    dropped = [a for a in old.arms if a not in arms]
    if dropped:
        problems.append(f"arms: bound {','.join(old.arms)}; this run leaves out {','.join(dropped)} (a run may "
                        "add arms to a folder, not drop them)")
    narrower = limit is not None and (old.limit is None or limit < old.limit)
    if narrower:
        problems.append(f"--limit: bound {old.limit or 'none (every question)'}, now {limit} (a run may raise "
                        "the limit of a folder, not lower it)")
    if problems:
        shown = "; ".join(problems[:8]) + (f"; and {len(problems) - 8} more" if len(problems) > 8 else "")
        raise BadInput(path, f"this results folder is bound to another registration or run: {shown}. Resume it "
                       "exactly as bound (or with more arms or a larger --limit), or pick another folder with --out")
    if scope == {"arms": old.arms, "limit": old.limit}:
        return changed(run_dir, bound, registration={**bound.registration, **reg})
    return changed(run_dir, bound, registration={**bound.registration, **reg}, scope=scope,
                   history=[*(h.to_dict() for h in bound.history or ()), {"time": now(), **scope}])


def commit(run_dir: Path, doc: Binding) -> None:
    """Write the binding if it is new or changed (before any call of this run)."""
    text = doc.text()
    bound = read_binding(Path(run_dir))
    if bound is None or bound.text() != text:
        write_text(Path(run_dir) / BINDING, text)


REPAIRED = "repaired.jsonl"
# the raw files `judge repair` rewrites, each with its key, and whether the retry rule governs it
REPAIRABLE = ((ANSWERS, ANSWER_KEY, True), (BLINDING, ("label",), False), (JUDGMENTS, JUDGMENT_KEY, True))


def repair(run_dir: Path) -> dict[str, int]:
    """Rewrite each raw file of the folder so every key keeps one valid history (jsonl.deduplicated): file name ->
    records moved. Holds the folder's lock. Each moved record is appended to repaired.jsonl with its file, line
    and reason, then one `repair` record with the file's sha256 before and after, before the file is replaced
    (atomically): the repair is logged, never silent, and a kill leaves the old file or the new."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir():
        raise BadInput(run_dir, "no such results folder")
    out = {}
    with locked(run_dir, "judge repair"):
        for name, key, retried in REPAIRABLE:
            path = run_dir / name
            if not path.exists():
                continue
            before = path.read_bytes()
            after, moved = jsonl.deduplicated(path, key, retried)
            out[name] = len(moved)
            if after == before:
                continue
            with jsonl.Appender(run_dir / REPAIRED) as log:
                for m in moved:
                    log.write({"type": "moved", "time": now(), "file": name, "line": m.line, "reason": m.reason,
                               "record": m.record})
                log.write({"type": "repair", "time": now(), "file": name, "moved": [m.line for m in moved],
                           "lines_before": before.count(b"\n"), "lines_after": after.count(b"\n"),
                           "sha256_before": hashlib.sha256(before).hexdigest(),
                           "sha256_after": hashlib.sha256(after).hexdigest()})
            with replacing(path) as tmp:
                tmp.write_bytes(after)
                with open(tmp, "rb") as f:
                    os.fsync(f.fileno())
    return out
