"""The seal lists every file a run could read, and code in an experiment folder runs only from its sealed source.

Trees are generated with names drawn from what a folder really holds and what an attacker would plant
(`__pycache__`, `.git`, MANIFEST and amendments.jsonl in subfolders, `.pyc`, dotfiles, unicode, spaces,
characters Python's str.splitlines() breaks at): sealing then verifying passes, and adding, changing or
removing any one file is refused naming it. The expected listing is the set of files the test wrote,
never what the code under test reports.
"""
from __future__ import annotations

import importlib.util
import os
import py_compile
import re
import shutil
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arms.glue import load_glue
from core.errors import BadInput
from registration.seal import inside, read_manifest, seal, verify_seal

from conftest import ROOT

pytestmark = pytest.mark.unit

NAMES = ("__pycache__", ".git", "MANIFEST", "amendments.jsonl", "glue.cpython-311.pyc", "q.jsonl", ".hidden",
         "with space", "naïve ü", "日本語.md", "line\u2028sep", "nel\x85name", "tab\tname", "private:x", "x.py",
         "prereg.toml", " lead", "trail ", "a  b")
TOP_ONLY = {"MANIFEST", "amendments.jsonl"}  # the two files the seal does not list, at the folder's top only


def tree(draw_paths: list[tuple[str, ...]]) -> set[tuple[str, ...]]:
    """The generated paths that can coexist as files (no file is also a folder of another), minus the top-level
    MANIFEST and amendments.jsonl and the top-level `private:` name (tested on their own)."""
    files: set[tuple[str, ...]] = {("prereg.toml",)}
    for p in sorted(draw_paths, key=len):
        if p[0] in TOP_ONLY or p[0].startswith("private:"):
            continue
        if any(p[:i] in files for i in range(1, len(p))) or any(f[:len(p)] == p for f in files):
            continue
        files.add(p)
    return files


paths = st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(tuple), min_size=1, max_size=12)
change = st.tuples(st.sampled_from(("add", "change", "remove")), st.integers(0, 10**6), st.sampled_from(NAMES))


def build(exp: Path, files) -> set[str]:
    if exp.exists():
        shutil.rmtree(exp)
    exp.mkdir()
    (exp / "prereg.toml").write_text("[experiment]\n")
    files = tree([*files])
    for i, p in enumerate(sorted(files - {("prereg.toml",)})):
        path = exp.joinpath(*p)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f"file {i}\n".encode())
    return {"/".join(p) for p in files}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(paths, change)
def test_every_file_is_listed_and_any_one_change_is_refused_naming_it(tmp_path, drawn, edit):
    exp = tmp_path / "exp"
    written = build(exp, drawn)
    seal(exp)
    assert set(read_manifest(exp)) == written  # every file, whatever its name or folder; nothing else
    verify_seal(exp)

    kind, pick, name = edit
    listed = sorted(written)
    if kind == "add":
        parent = exp.joinpath(*listed[pick % len(listed)].split("/")[:-1])
        target = parent / name
        if target.exists() or (parent == exp and (name in TOP_ONLY or name.startswith("private:"))):
            target = parent / f"new {name}"
        if target.is_dir():
            target = target / "planted"
        target.write_bytes(b"planted\n")
        expected = "added after sealing"
    else:
        target = exp.joinpath(*listed[pick % len(listed)].split("/"))
        if kind == "change":
            target.write_bytes(target.read_bytes() + b"x")
            expected = "changed after sealing"
        else:
            target.unlink()
            expected = "removed after sealing"
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert e.value.file == str(target) and expected in e.value.message, (str(e.value), target)


@pytest.mark.parametrize("rel", ["__pycache__/exam.jsonl", "sets/MANIFEST", "sets/amendments.jsonl",
                                 "__pycache__/glue.cpython-311.pyc", ".git/config"])
def test_the_names_the_seal_used_to_skip_are_listed(tmp_path, rel):
    """A question set in a cache-named folder, reserved names in a subfolder, bytecode: each a file a run can read."""
    exp = tmp_path / "exp"
    build(exp, set())
    seal(exp)
    (exp / rel).parent.mkdir(parents=True, exist_ok=True)
    (exp / rel).write_text('{"id": "q1", "question": "planted?"}\n')
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert e.value.file == str(exp / rel) and "added after sealing" in e.value.message
    seal(exp)
    assert rel in read_manifest(exp)
    (exp / rel).write_text('{"id": "q1", "question": "edited?"}\n')
    with pytest.raises(BadInput, match="changed after sealing"):
        verify_seal(exp)


@pytest.mark.parametrize("name", ["line\nbreak", "carriage\rreturn", os.fsdecode(b"bad\xffutf8"), "private:top"])
def test_a_name_no_manifest_line_can_hold_is_refused_naming_it(tmp_path, name):
    exp = tmp_path / "exp"
    build(exp, {("sub", "ok.txt")})
    seal(exp)
    (exp / name).write_bytes(b"x")
    for check in (seal, verify_seal):
        with pytest.raises(BadInput) as e:
            check(exp)
        assert e.value.file == str(exp / name), str(e.value)


@pytest.mark.parametrize("kind", ["fifo", "link to a file", "link to a folder", "link outside"])
def test_links_and_special_files_are_refused_without_reading_them(tmp_path, kind):
    """A FIFO is never opened (reading it would block forever); a link is refused wherever it points."""
    exp = tmp_path / "exp"
    build(exp, {("sub", "ok.txt")})
    seal(exp)
    planted = exp / "sub" / "planted"
    if kind == "fifo":
        os.mkfifo(planted)
        # should anything open it to read, a writer connects and hangs up: the read ends (and the test fails)
        # instead of blocking forever
        stop = threading.Event()
        threading.Thread(target=hang_up_on_readers, args=(planted, stop), daemon=True).start()
    elif kind == "link to a file":
        planted.symlink_to(exp / "sub" / "ok.txt")
    elif kind == "link to a folder":
        planted.symlink_to(exp / "sub", target_is_directory=True)
    else:
        (tmp_path / "outside.txt").write_text("x")
        planted.symlink_to(tmp_path / "outside.txt")
    try:
        for check in (seal, verify_seal):
            with pytest.raises(BadInput) as e:
                check(exp)
            assert e.value.file == str(planted), str(e.value)
    finally:
        if kind == "fifo":
            stop.set()


def hang_up_on_readers(fifo: Path, stop: threading.Event) -> None:
    while not stop.wait(0.05):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass  # no reader


@pytest.mark.parametrize("name", ["MANIFEST", "amendments.jsonl"])
def test_the_seals_own_files_must_be_files(tmp_path, name):
    """A folder in their place would hide its contents from the seal's own reading: refused, named."""
    exp = tmp_path / "exp"
    build(exp, {("sub", "ok.txt")})
    seal(exp)
    (exp / name).unlink(missing_ok=True)
    (exp / name).mkdir()
    (exp / name / "inside.jsonl").write_text("{}\n")
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert e.value.file == str(exp / name) and "must be a file" in e.value.message, str(e.value)


@pytest.mark.parametrize("edit,line", [(lambda t: t + t.splitlines(keepends=True)[0], 3),  # a name listed twice
                                       (lambda t: t.replace("  ", " ", 1), 1),  # not '<sha256>  <path>'
                                       (lambda t: t + "\udcff", None)])  # not UTF-8
def test_an_edited_manifest_is_refused_naming_it_not_a_traceback(tmp_path, edit, line):
    exp = tmp_path / "exp"
    build(exp, {("sub", "ok.txt")})
    seal(exp)
    text = (exp / "MANIFEST").read_text()
    (exp / "MANIFEST").write_bytes(edit(text).encode("utf-8", "surrogateescape"))
    with pytest.raises(BadInput) as e:
        verify_seal(exp)
    assert (e.value.file, e.value.line) == (str(exp / "MANIFEST"), line), str(e.value)


@pytest.mark.parametrize("rel", ["MANIFEST", "amendments.jsonl", "./MANIFEST", "sets/../amendments.jsonl"])
def test_the_two_unlisted_files_cannot_be_registered_as_an_input(tmp_path, rel):
    exp = tmp_path / "exp"
    build(exp, {("sets", "exam.jsonl")})
    seal(exp)
    with pytest.raises(BadInput) as e:
        inside(exp, rel, exp / "prereg.toml", "sets")
    assert e.value.field == "sets" and "does not list" in e.value.message
    assert inside(exp, "sets/exam.jsonl", exp / "prereg.toml", "sets") == (exp / "sets" / "exam.jsonl").resolve()


def test_the_demo_seals_to_its_shipped_manifest(tmp_path):
    exp = tmp_path / "demo"
    shutil.copytree(ROOT / "sealed" / "demo", exp, ignore=shutil.ignore_patterns("__pycache__"))
    seal(exp)
    assert (exp / "MANIFEST").read_bytes() == (ROOT / "sealed" / "demo" / "MANIFEST").read_bytes()


# --- code runs only from its sealed source ------------------------------------------------------------------------

GLUE = '''import sys
from pathlib import Path

from arms.glue import GlueResult

sys.path.insert(0, str(Path(__file__).parent))  # glue that imports its own modules puts its folder on the path
import {helper}
from {package} import {sub}


def answer(question, call_model, experiment_dir):
    return GlueResult("glue:{word} " + {helper}.WORD + " " + {sub}.WORD)
'''
HELPER = 'WORD = "helper:{word}"\n'


def plant_bytecode(source: Path, honest: str, evil: str) -> None:
    """A valid __pycache__ entry for `source` compiled from `evil`: same size and mtime as the honest text, so
    Python's own import would run the bytecode instead of the source it sits beside."""
    assert len(honest) == len(evil)
    source.write_text(evil)
    stamp = source.stat().st_mtime_ns
    py_compile.compile(str(source), cfile=importlib.util.cache_from_source(str(source)), doraise=True)
    source.write_text(honest)
    os.utime(source, ns=(stamp, stamp))


@pytest.fixture
def code_folder(tmp_path, monkeypatch, request):
    """An experiment folder with a glue file, a sibling module and a package module (names unique to the test)."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    tag = re.sub(r"\W", "_", request.node.name) + f"_{os.getpid()}"
    names = {"helper": f"helper_{tag}", "package": f"pkg_{tag}", "sub": "words"}
    exp = tmp_path / "exp"
    build(exp, set())
    files = {"glue.py": GLUE.format(word="honest", **names), f"{names['helper']}.py": HELPER.format(word="honest"),
             f"{names['package']}/__init__.py": "", f"{names['package']}/words.py": 'WORD = "sub:honest"\n'}
    for rel, text in files.items():
        (exp / rel).parent.mkdir(parents=True, exist_ok=True)
        (exp / rel).write_text(text)
    yield exp, names, files
    for name in [m for m in sys.modules if tag in m]:
        del sys.modules[name]


def answer_of(exp: Path) -> str:
    return load_glue("glue.py:answer", exp)(None, None, exp).answer


@pytest.mark.parametrize("which", ["glue", "helper", "sub"])
def test_bytecode_beside_a_sealed_source_never_runs(code_folder, which):
    """Planted bytecode (valid for the source's size and mtime, so Python would use it) sealed with the folder:
    every answer still comes from the source the MANIFEST vouches for."""
    exp, names, files = code_folder
    rel = {"glue": "glue.py", "helper": f"{names['helper']}.py", "sub": f"{names['package']}/words.py"}[which]
    honest = files[rel]
    plant_bytecode(exp / rel, honest, honest.replace("honest", "BYTES!"))
    seal(exp)
    assert any(r.endswith(".pyc") for r in read_manifest(exp))
    assert answer_of(exp) == "glue:honest helper:honest sub:honest"
    verify_seal(exp)  # and importing wrote nothing into the folder


def test_importing_writes_no_bytecode_into_the_folder(code_folder):
    exp, _, _ = code_folder
    seal(exp)
    assert answer_of(exp) == "glue:honest helper:honest sub:honest"
    assert not list(exp.rglob("__pycache__")) and not list(exp.rglob("*.pyc"))
    verify_seal(exp)


@pytest.mark.parametrize("which", ["glue", "helper", "sub"])
@pytest.mark.parametrize("how", ["edited after sealing", "not sealed"])
def test_a_module_the_seal_does_not_vouch_for_is_refused_naming_it(code_folder, which, how):
    exp, names, files = code_folder
    rel = {"glue": "glue.py", "helper": f"{names['helper']}.py", "sub": f"{names['package']}/words.py"}[which]
    if how == "not sealed":
        seal(exp)
        manifest = exp / "MANIFEST"
        manifest.write_text("".join(f"{line}\n" for line in manifest.read_text().splitlines()
                                    if not line.endswith(f"  {rel}")))
    else:
        seal(exp)
        (exp / rel).write_text(files[rel].replace("honest", "edited"))
    with pytest.raises(BadInput) as e:
        answer_of(exp)
    assert e.value.file == str((exp / rel).resolve()), str(e.value)
    assert ("changed after sealing" if how == "edited after sealing" else "not in the experiment's MANIFEST") \
        in e.value.message


def test_a_module_the_folder_holds_only_as_bytecode_is_refused(code_folder):
    exp, names, files = code_folder
    helper = exp / f"{names['helper']}.py"
    py_compile.compile(str(helper), cfile=str(helper.with_suffix(".pyc")), doraise=True)
    helper.unlink()  # only helper_*.pyc is left, which Python imports as it is
    seal(exp)
    with pytest.raises(BadInput) as e:
        answer_of(exp)
    assert e.value.file == str(helper.with_suffix(".pyc")) and "only as bytecode" in e.value.message, str(e.value)
