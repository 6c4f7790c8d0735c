"""Faults lose nothing and show no traceback: a full disk or a read-only results folder is a clear error
(and re-running resumes); model calls that all time out or come back truncated are counted error rows."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from core import jsonl
from registration.seal import seal

from conftest import ROOT, cli, http_prereg
from support.scripted_server import ScriptedServer, Seen, Step, reply, truncated, verdict

pytestmark = pytest.mark.integration


def _mount_tmpfs(path: Path, options: str) -> None:
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}): run as root to test disk faults")


def _umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], check=False)


@pytest.mark.parametrize("size", ["24k", "60k"])
def test_disk_full_is_a_clear_error_and_loses_nothing(tmp_path, size):
    mnt = tmp_path / "tiny"
    _mount_tmpfs(mnt, f"size={size}")
    try:
        out = mnt / "run"
        r = cli("judge", "run", "--arms", "base", "--limit", "3", "--out", str(out), "--quiet")
        assert r.returncode == 2, r.stderr
        assert "No space left on device" in r.stderr and "Traceback" not in r.stderr
        saved = tmp_path / "saved"
        shutil.copytree(out, saved)
    finally:
        _umount(mnt)
    for name in ("answers.jsonl", "blinding.jsonl", "judgments.jsonl"):
        if (saved / name).exists():
            list(jsonl.read(saved / name))  # every complete record still parses
    before = [r["row"] for _, r in jsonl.read(saved / "answers.jsonl")] if (saved / "answers.jsonl").exists() else []
    r = cli("judge", "run", "--arms", "base", "--limit", "3", "--out", str(saved), "--quiet")
    assert r.returncode == 0, r.stderr
    rows = [r["row"] for _, r in jsonl.read(saved / "answers.jsonl")]
    assert rows[:len(before)] == before and len(rows) == len(set(rows)) == 6
    assert cli("judge", "verify", str(saved)).returncode == 0


def test_read_only_results_folder_is_a_clear_error(tmp_path):
    mnt = tmp_path / "ro"
    _mount_tmpfs(mnt, "ro,size=64k")
    try:
        r = cli("judge", "run", "--arms", "base", "--limit", "1", "--out", str(mnt / "run"), "--quiet")
        assert r.returncode == 2 and "Read-only file system" in r.stderr and "Traceback" not in r.stderr
    finally:
        _umount(mnt)


# --- every arm call times out or is cut off: a clean run of error rows, counted per arm ---------------

LIMIT = 2


def _faulty_prereg(url: str) -> str:
    return http_prereg("faults", f"{url}/v1", f"""[models.slow]
backend = "openai"
source = "slow-model"
base_url = "{url}/v1"
family = "scripted"
timeout_s = 0.3
attempts = 2

[models.cut]
backend = "anthropic"
source = "cut-model"
base_url = "{url}"
family = "scripted"
sampling_params = true
timeout_s = 5
attempts = 2

[[arms]]
name = "slow"
model = "slow"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0 }}

[[arms]]
name = "cut"
model = "cut"
quants = ["served"]
generation = {{ temperature = 0.0, max_tokens = 64, seed = 0 }}
""", [("H-cut", "slow", "cut")])


def _report_cells(report: str) -> dict[str, dict[str, str]]:
    """The "Arms × quants" table of report.md, as arm -> column -> cell text."""
    lines = report.split("## Arms × quants", 1)[1].splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("| arm |"))
    cols = [c.strip() for c in lines[header].strip("|").split("|")]
    out = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        out[cells[0]] = dict(zip(cols, cells, strict=False))
    return out


def test_run_whose_every_arm_call_times_out_or_is_cut_off_exits_cleanly_counting_error_rows(tmp_path):
    calls = {"slow-model": 0, "cut-model": 0, "judge-model": 0}

    def script(seen: Seen) -> Step:
        calls[seen.model] += 1
        if seen.model == "slow-model":
            return reply("too late", delay_s=3.0)  # registered timeout_s = 0.3
        if seen.model == "cut-model":
            return truncated("length" if calls["cut-model"] % 2 else "chunked", text="cut off")
        return verdict({"rationale": "Fine.", "score": 2, "harmful": False})  # never reached: nothing to judge

    exp, out = tmp_path / "exp", tmp_path / "out"
    shutil.copytree(ROOT / "sealed" / "demo", exp)
    with ScriptedServer(script, models=("slow-model", "cut-model", "judge-model")) as server:
        (exp / "prereg.toml").write_text(_faulty_prereg(server.url))
        seal(exp)
        r = cli("judge", "run", "--exp", str(exp), "--arms", "--limit", str(LIMIT), "--out", str(out), "--quiet",
                env={"OPENAI_API_KEY": "sk-test"}, timeout=120)
        # the folder is complete, and the run says that it decided nothing (a registered check: exit 1)
        assert r.returncode == 1 and "check failed: H-cut decided nothing" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "Traceback" not in r.stdout, r.stderr
    # every arm call was attempted the registered 2 times; every slow one was abandoned at the timeout
    assert calls == {"slow-model": 2 * LIMIT, "cut-model": 2 * LIMIT, "judge-model": 0}
    slow = [s.index for s in server.seen if s.model == "slow-model"]
    assert sorted(server.abandoned) == slow and all(0.25 <= server.abandoned[i] < 0.7 for i in slow), server.abandoned

    rows = [r for _, r in jsonl.read(out / "answers.jsonl")]
    assert len(rows) == 2 * LIMIT and all(r["status"] == "error" and r["text"] is None for r in rows)
    kinds = {arm: {r["error"]["kind"] for r in rows if r["arm"] == arm} for arm in ("slow", "cut")}
    assert kinds == {"slow": {"timeout"}, "cut": {"connection"}}
    assert not (out / "judgments.jsonl").exists() or not (out / "judgments.jsonl").read_text().strip()

    numbers = json.loads((out / "numbers.json").read_text())
    for c in numbers["cells"]:
        assert (c["answers"], c["answer_errors"], c["scored"], c["mean"]) == (LIMIT, LIMIT, 0, None), c
    causes = {c["arm"]: (c["answer_error_kinds"], c["judge_error_kinds"]) for c in numbers["cells"]}
    assert causes == {"slow": ({"timeout": LIMIT}, {}), "cut": ({"connection": LIMIT}, {})}, causes
    assert numbers["comparisons"][0]["verdict"] == "inconclusive"
    report = (out / "report.md").read_text()
    cells = _report_cells(report)
    assert set(cells) == {"slow", "cut"}
    for arm in ("slow", "cut"):
        assert cells[arm]["answers"] == str(LIMIT) and cells[arm]["answer errors"] == str(LIMIT), cells[arm]
        assert cells[arm]["mean score"] == "–" and cells[arm]["scored"] == "0"
    assert (f"\nCauses of answer errors: slow/served timeout {LIMIT}; cut/served connection {LIMIT}.\n"
            in report), report
    assert "Causes of judge errors" not in report

    v = cli("judge", "verify", str(out), timeout=120)
    assert "Traceback" not in v.stderr, v.stderr
    assert v.returncode == 0, v.stderr

    # a cause changed in numbers.json is named by both recomputations and by the re-rendered report line
    numbers["cells"][0]["answer_error_kinds"] = {"other": LIMIT}
    (out / "numbers.json").write_text(json.dumps(numbers, indent=1) + "\n")
    v = cli("judge", "verify", str(out), timeout=120)
    assert v.returncode == 1 and "Traceback" not in v.stderr, v.stderr
    field = f"cells[{numbers['cells'][0]['arm']}/served].answer_error_kinds"
    for line in (f"numbers.json is missing {field}.timeout (the recomputation from raw files gives {LIMIT})",
                 f"numbers.json {field}.other = {LIMIT}: not produced by the recomputation from raw files",
                 f"numbers.json {field}.timeout = None, but the independent plain-Python recomputation gives {LIMIT}"):
        assert line in v.stderr, v.stderr
    assert "report.md line" in v.stderr and "Causes of answer errors" in v.stderr, v.stderr
