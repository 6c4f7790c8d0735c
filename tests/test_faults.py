"""Faults lose nothing: a full disk or a read-only results folder is a clear error, and re-running resumes."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from arms import jsonl

from conftest import cli


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
