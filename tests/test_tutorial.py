"""docs/tutorial.md, run as a reader runs it: every ```bash block of the page, in order, in one shell, in an empty
folder, on the embedded model; no command may fail, and the end state is the one the page describes. The page's
blocks are read from the page itself, so a command changed there is the command run here. The reader's keyboard
at `judge label` is the one input the page cannot show: this test types a score and an empty note per answer."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass

import pytest

from judge.__main__ import parser

from conftest import ROOT

PAGE = ROOT / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```[ \t]*$", re.M | re.S)
FILE_MARK = re.compile(r"<!-- file: (\S+) -->\s*$")
SAMPLED_QUESTIONS, ARMS, QUANTS = 2, 2, 1  # the page's `label --sample 2`, arms base and trained, quant source


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int  # the page's line of the opening fence
    file: str | None  # the file a `<!-- file: PATH -->` line just above says the block is an excerpt of


def blocks(text: str) -> list[Block]:
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = FILE_MARK.match(before)
        out.append(Block(m.group(1), m.group(2), text.count("\n", 0, m.start()) + 1, mark and mark.group(1)))
    return out


def script(page: list[Block]) -> str:
    """The page's bash blocks as one shell script, each announced on stderr by its line in the page."""
    parts = ["set -euo pipefail"]
    for b in page:
        if b.lang == "bash":
            parts += [f"echo '>>> docs/tutorial.md:{b.line}' >&2", b.body]
    return "\n".join(parts) + "\n"


def judge_commands(page: list[Block]) -> list[list[str]]:
    """Every `python -m judge ...` command of the page's bash blocks, as argv after `python -m judge`."""
    commands = []
    for b in page:
        if b.lang == "bash":
            for line in b.body.replace("\\\n", " ").splitlines():
                if line.startswith("python -m judge "):
                    commands.append(shlex.split(line)[3:])
    return commands


@pytest.mark.unit
def test_the_page_runs_init_to_verify_and_every_command_parses():
    """Cheap, before the run below: the commands the page runs are init through a run, a label, verify and publish,
    and each command the page shows (run, in a ```text block or in its prose) is accepted by the command line as
    it stands."""
    text = PAGE.read_text(encoding="utf-8")
    page = blocks(text)
    commands = judge_commands(page)
    assert [c[0] for c in commands] == ["init", "seal", "run", "view", "label", "run", "verify", "publish", "verify"]
    shown = [shlex.split(b.body.replace("\\\n", " "))[3:] for b in page if b.lang == "text"]
    prose = FENCE.sub("", text)
    inline = [shlex.split(m)[3:] for m in re.findall(r"`(python -m judge [^`]*)`", prose)]
    assert len(shown) == 1 and len(inline) >= 5
    for argv in commands + shown + inline:
        parser().parse_args(argv)  # an option the parser does not know, or a missing argument, exits 2 here
    assert [b.file for b in page if b.file] == ["my-experiment/prereg.toml"]
    assert "python -m judge" in script(page) and ">>> docs/tutorial.md:" in script(page)


@pytest.mark.unit
@pytest.mark.parametrize("failing", ["false", "false | cat", "echo ok\ncat no-such-file"])
def test_a_failing_command_of_a_page_stops_the_script_naming_its_block(tmp_path, failing):
    """The run below can fail: a command that exits non-zero (alone, in a pipeline, or not the block's last) stops
    the page's script there, and the last block announced is the one that failed."""
    page = blocks(f"# P\n\n```bash\necho first\n```\n\ntext\n\n```bash\n{failing}\n```\n\n```bash\necho never\n```\n")
    assert [(b.lang, b.line) for b in page] == [("bash", 3), ("bash", 9), ("bash", 9 + failing.count("\n") + 4)]
    r = subprocess.run(["bash", "-c", script(page)], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode != 0 and "never" not in r.stdout
    assert re.findall(r"^>>> docs/tutorial.md:(\d+)$", r.stderr, re.M)[-1] == "9"


# the whole page on the embedded model: about 35 s of CPU, so its group is handed out early (conftest._seconds)
EXPECTED_SECONDS = {"test_the_tutorial_runs_verbatim_on_the_embedded_model": 60.0}


@pytest.mark.slow
def test_the_tutorial_runs_verbatim_on_the_embedded_model(tmp_path):
    page = blocks(PAGE.read_text(encoding="utf-8"))
    # `python` in the page is this interpreter, with this checkout first on its path; exec'd by its own path, so a
    # virtual environment's interpreter keeps its environment (a symlink elsewhere would not find pyvenv.cfg)
    shims = tmp_path / "bin"
    shims.mkdir()
    (shims / "python").write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} "$@"\n')
    (shims / "python").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env["PATH"] = f"{shims}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *filter(None, [env.get("PYTHONPATH")])])
    start = tmp_path / "start"  # the folder the reader opens a shell in
    start.mkdir()
    keyboard = "2\n\n0\n\n" * 10  # a score, then Enter for no note, per answer shown (more than are asked)
    r = subprocess.run(["bash", "-c", script(page)], cwd=start, env=env, input=keyboard, capture_output=True,
                       text=True, timeout=900)
    tail = f"\n--- stdout ---\n{r.stdout[-4000:]}\n--- stderr ---\n{r.stderr[-4000:]}"
    assert r.returncode == 0, f"a command of the page failed (the last >>> line says which block){tail}"
    ran = re.findall(r"^>>> docs/tutorial.md:(\d+)$", r.stderr, re.M)
    assert ran == [str(b.line) for b in page if b.lang == "bash"], tail

    work = start / "blindeval-tutorial"
    for b in page:  # an excerpt the page shows of a file the commands write is in that file, line for line
        if b.file:
            assert b.body in (work / b.file).read_text(encoding="utf-8"), b.file
    printed = re.search(r"next: (python -m judge run .*)$", r.stdout, re.M).group(1)
    run_line = next(" ".join(["python -m judge", *c]) for c in judge_commands(page) if c[0] == "run")
    assert run_line.startswith(printed), (printed, run_line)  # init's next command is the page's, plus --out

    results = work / "my-results"
    assert "H1-source" in (results / "report.md").read_text(encoding="utf-8")
    numbers = json.loads((results / "numbers.json").read_text(encoding="utf-8"))
    assert [c["id"] for c in numbers["comparisons"]] == ["H1-source"]
    assert numbers["judge_validity"]["gold"]["sources"]["human"] == SAMPLED_QUESTIONS * ARMS * QUANTS
    assert "verify: every number in my-results matches" in r.stdout + r.stderr, tail

    # the question file was sealed private: the results folder holds its text, the published bundle none of it
    questions = [line.split(",")[1] for line in (work / "questions.csv").read_text().splitlines()[1:]]
    assert len(questions) == 4
    for q in questions:
        assert q in (results / "review.md").read_text(encoding="utf-8"), q
        leaked = [p for p in (work / "my-bundle").rglob("*") if p.is_file() and q.encode() in p.read_bytes()]
        assert leaked == [], (q, leaked)
