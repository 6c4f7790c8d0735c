"""Blinding labels derive from a secret the results folder holds, never from anything public.

A real `judge run` (single and pairwise verdicts) against the scripted server on 127.0.0.1 writes the folder; every
file of its registration, its run.json and binding.json and its blind page are then tried as the key of every label,
under the derivation a folder bound before blinding secrets used and under every other way of taking a key from a
public value. None of them gives a single label; the folder's secret gives all. A folder written by the previous
version (tests/data/legacy: labels from the experiment's seed and name, no secret) still verifies.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_folder import SERVED, Script, experiment, lines, run

from arms.folder import SECRET, locked
from core.errors import BadInput
from judge.judging.blinding import folder_label_secret, label_for, label_secret
from judge.judging.pairwise import pair_label
from judge.outputs.view import view

from conftest import cli
from support.scripted_server import ScriptedServer

LEGACY = Path(__file__).parent / "data" / "legacy"


@pytest.fixture(scope="module")
def folders(tmp_path_factory) -> tuple[Path, Path, Path, int]:
    """(experiment, results folder, a second folder of the same registration and scope, the calls the second run
    sent to the server): both arms on 3 questions, judged single and pairwise."""
    root = tmp_path_factory.mktemp("secret")
    with ScriptedServer(Script(), models=SERVED) as server:
        exp = experiment(root, server.openai_url)
        first = run(exp, root / "out", "--arms", "--limit", "3", "--mode", "both")
        before = len(server.seen)
        second = run(exp, root / "other", "--arms", "--limit", "3", "--mode", "both")
        calls = len(server.seen) - before
    assert before > 0  # the first run paid for its calls: the second's count below can tell a cache hit
    for r, out in ((first, root / "out"), (second, root / "other")):
        assert (out / "numbers.json").is_file(), r.stderr  # finished (a decision may fail its check: exit 1)
    return exp, root / "out", root / "other", calls


@pytest.fixture(scope="module")
def folder(folders) -> tuple[Path, Path]:
    return folders[0], folders[1]


def copy(out: Path, to: Path) -> Path:
    shutil.copytree(out, to)
    return to


def tokens(text: str) -> set[str]:
    """Every value a reader could take a key from: whole lines, and each run of word characters with `:`, `-`, `.`."""
    return {t for t in (*text.splitlines(), *re.findall(r"[\w:.\-]+", text)) if t.strip()}


def candidate_keys(values: set[str]) -> list[bytes]:
    """Every HMAC key a reader can make from the public values: each value's bytes and their sha256, the folder
    secret's derivation applied to each value read as hex, and the label key as the previous version made it."""
    keys: set[bytes] = set()
    for v in values:
        keys |= {v.encode(), label_secret(v)}
        if re.fullmatch(r"(?:[0-9a-f]{2})+", v):
            raw = bytes.fromhex(v)
            keys |= {raw, hashlib.sha256(raw).digest(), folder_label_secret(raw, "")}
    return sorted(keys)


def public_values(exp: Path, out: Path, page: Path) -> set[str]:
    run_json = json.loads((out / "run.json").read_text())
    values = {run_json["label_key"], f"blinding:{run_json['seed']}:{run_json['experiment']}",
              f"blinding:{run_json['seed']}:{run_json['name']}"}
    for f in [*sorted(p for p in exp.rglob("*") if p.is_file()), out / "run.json", out / "binding.json", page]:
        values |= tokens(f.read_text(errors="replace"))
    return values


@pytest.mark.integration
def test_the_blind_page_and_every_file_of_the_registration_reproduce_no_label(folder, tmp_path):
    exp, out = folder
    page = view(out, blind=True, out=tmp_path / "blind.html")
    keys = lines(out / "blinding.jsonl")
    singles = {k["label"]: k["row"] for k in keys if k.get("type", "blinding") == "blinding"}
    pairs = {k["label"]: (k["hypothesis"], k["question_id"], k["first"]) for k in keys if k.get("type") == "pair"}
    assert len(singles) == 6 and len(pairs) == 6
    secret = bytes.fromhex((out / SECRET).read_text().strip())
    # the folder's own secret gives every label: the derivation below is the one that could find them
    own = folder_label_secret(secret, "")
    assert all(label_for(own, row) == label for label, row in singles.items())
    assert all(pair_label(own, *p) == label for label, p in pairs.items())
    # no value of the registration, run.json, binding.json or the blind page gives any
    tried = candidate_keys(public_values(exp, out, page))
    assert len(tried) > 1000
    found = [label for key in tried for label, row in singles.items() if label_for(key, row) == label]
    found += [label for key in tried for label, p in pairs.items() if pair_label(key, *p) == label]
    assert found == []
    # and the secret is in none of them
    published = "".join((out / n).read_text() for n in ("run.json", "binding.json", "report.md", "review.md"))
    assert secret.hex() not in published + page.read_text()
    assert stat.S_IMODE((out / SECRET).stat().st_mode) == 0o600


@pytest.mark.integration
def test_two_folders_of_one_registration_share_no_label_and_the_second_pays_for_no_call(folders):
    """Labels enter no prompt and no call key: a second folder's every call is served by the call cache."""
    _, out, other, calls = folders
    mine, theirs = ({k["label"]: k.get("row") for k in lines(d / "blinding.jsonl")} for d in (out, other))
    assert len(mine) == len(theirs) == 12 and not set(mine) & set(theirs)
    assert sorted(filter(None, mine.values())) == sorted(filter(None, theirs.values()))
    assert calls == 0
    assert json.loads((out / "numbers.json").read_text())["comparisons"] == \
        json.loads((other / "numbers.json").read_text())["comparisons"]


@pytest.mark.integration
def test_verify_names_a_label_forged_consistently_in_the_key_and_the_verdicts(folder, tmp_path):
    """A label changed in blinding.jsonl and in every verdict naming it (to the label the previous version's public
    derivation gives that row) no longer derives from the folder's secret: named by file, line and field."""
    exp, out = folder
    forged = copy(out, tmp_path / "forged")
    keys = lines(forged / "blinding.jsonl")
    first = next(k for k in keys if k.get("type", "blinding") == "blinding")
    run_json = json.loads((forged / "run.json").read_text())
    new = label_for(label_secret(run_json["label_key"]), first["row"])
    assert new != first["label"]
    for name in ("blinding.jsonl", "judgments.jsonl"):
        path = forged / name
        path.write_text(path.read_text().replace(first["label"], new))
    r = cli("judge", "verify", str(forged), "--exp", str(exp))
    assert r.returncode == 1, r.stdout + r.stderr
    line = 1 + keys.index(first)
    assert (f"blinding.jsonl:{line}: field 'label': {new!r} does not derive from any answer of this run under the "
            "folder's blinding secret") in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.integration
def test_a_missing_or_replaced_secret_is_a_finding_and_a_resume_is_refused_before_any_call(folder, tmp_path):
    exp, out = folder
    for damage in ("missing", "replaced"):
        d = copy(out, tmp_path / damage)
        if damage == "missing":
            (d / SECRET).unlink()
        else:
            (d / SECRET).write_text(os.urandom(32).hex() + "\n")
        r = cli("judge", "verify", str(d), "--exp", str(exp))
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stdout + r.stderr
        assert str(d / SECRET) in r.stderr and "were not re-derived" in r.stderr, r.stderr
        # the blind page needs no secret: it reads the labels blinding.jsonl keys
        assert view(d, blind=True, out=tmp_path / f"{damage}.html").is_file()
        r = run(exp, d, "--arms", "--limit", "3", "--mode", "both")  # no server: refused before any call
        assert r.returncode == 2 and str(d / SECRET) in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.mark.integration
def test_the_published_bundle_holds_no_secret_and_verifies_saying_the_labels_were_not_rederived(folder, tmp_path):
    exp, out = folder
    r = cli("judge", "publish", str(out), "--out", str(tmp_path / "bundle"))
    assert r.returncode == 0, r.stderr
    secret = (out / SECRET).read_text().strip()
    files = [p for p in (tmp_path / "bundle").rglob("*") if p.is_file()]
    assert files and not any(p.name == SECRET or secret.encode() in p.read_bytes() for p in files)
    v = cli("judge", "verify", str(tmp_path / "bundle"))
    assert "the labels were not re-derived: they derive from the results folder's blinding secret" in v.stdout, v.stdout
    assert "does not derive" not in v.stderr


@pytest.mark.integration
def test_a_folder_written_by_the_previous_version_still_verifies_and_says_its_labels_are_public(tmp_path):
    """tests/data/legacy: a folder `judge run` wrote before blinding secrets, with its experiment (labels from the
    experiment's seed and name, no blinding.secret, no blinding_secret_sha256 in binding.json)."""
    exp, out = shutil.copytree(LEGACY / "exp", tmp_path / "exp"), shutil.copytree(LEGACY / "out", tmp_path / "out")
    assert not (out / SECRET).exists() and "blinding_secret_sha256" not in (out / "binding.json").read_text()
    r = cli("judge", "verify", str(out), "--exp", str(exp), "--no-cache")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "the labels derive from the label key 'blinding:11:folder'" in r.stdout
    assert "report.md: written before reports opened with a summary" in r.stdout  # the rest is checked line by line
    key = label_secret("blinding:11:folder")
    assert all(label_for(key, k["row"]) == k["label"] for k in lines(out / "blinding.jsonl") if "row" in k)
    # an edited legacy label is still caught
    keys = (out / "blinding.jsonl").read_text()
    label = lines(out / "blinding.jsonl")[0]["label"]
    (out / "blinding.jsonl").write_text(keys.replace(label, "L000000000000"))
    r = cli("judge", "verify", str(out), "--exp", str(exp), "--no-cache")
    assert r.returncode == 1 and "under the label key 'blinding:11:folder'" in r.stderr, r.stderr


# ---- the lock's message -------------------------------------------------------------------------------------------

HOLDER = {"pid": st.integers(1, 2**22), "host": st.text("abcdefgh-.", min_size=1, max_size=12),
          "started": st.just("2026-12-04T21:00:00+00:00"), "command": st.sampled_from(["judge run", "arms collect"])}


@pytest.mark.unit
@given(holder=st.fixed_dictionaries({}, optional=HOLDER))
def test_the_lock_message_says_what_the_holder_wrote_and_never_none(holder, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("locked")
    fd = os.open(run_dir / "run.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        os.write(fd, json.dumps(holder).encode())
        with pytest.raises(BadInput) as e, locked(run_dir, "judge run"):
            pass
    finally:
        os.close(fd)
    message = e.value.message
    assert "None" not in message
    assert f"another `{holder.get('command', 'judge run')}` is writing" in message
    for k in ("pid", "host", "started"):
        if k in holder:
            assert str(holder[k]) in message, message
    if not {"pid", "host", "started"} & set(holder):
        assert "it has not written its pid and host yet" in message
