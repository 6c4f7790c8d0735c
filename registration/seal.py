"""Sealing: the sha256 MANIFEST of an experiment folder, its verification, and dated amendments.

MANIFEST lines are `<sha256>  <relative path>`, or `<sha256>  private:<relative path>` for a private
file bound by hash only: it may be absent (kept out of the repository); when present it must match.
Any other file that goes missing breaks the seal. A symbolic link anywhere in the folder is refused
(by `seal` and by every check of the seal): its target could change, or lie outside, unseen. A path
the registration names (a question set) must resolve inside the folder, where the seal covers it.
Amendments are appended to amendments.jsonl, each hash-chained to the MANIFEST and the amendment
before it, so none can be inserted, edited or dropped unseen.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import os
from pathlib import Path

from arms import jsonl
from arms.atomic import write_text
from arms.errors import BadInput

MANIFEST = "MANIFEST"
AMENDMENTS = "amendments.jsonl"
UNSEALED = {MANIFEST, AMENDMENTS}
PRIVATE = "private:"


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sealed_files(exp_dir: Path) -> list[Path]:
    """Every file the seal covers; a symbolic link (to a file or a folder) is bad input, named."""
    out = []
    for top, dirs, files in os.walk(exp_dir):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in dirs + files:
            if os.path.islink(os.path.join(top, name)):
                raise BadInput(Path(top) / name, "is a symbolic link: the seal covers only real files inside the "
                               "experiment folder (copy the target in, then seal)")
        out += [Path(top) / f for f in files if f not in UNSEALED]
    return sorted(out)


def inside(exp_dir: Path, rel: str, file: Path, field: str) -> Path:
    """The real path of a file the registration names, refused unless it lies inside the experiment folder."""
    root = Path(exp_dir).resolve()
    path = (root / rel).resolve()
    if not path.is_relative_to(root):
        raise BadInput(file, f"{rel!r} resolves to {path}, outside the experiment folder {root}: the seal cannot "
                       "cover it; put the file inside the folder and seal it", field=field)
    return path


def seal(exp_dir: Path, private: tuple[str, ...] = ()) -> Path:
    """Write MANIFEST over every file in the folder; `private` files keep their hash and may be removed later."""
    exp_dir = Path(exp_dir)
    if not (exp_dir / "prereg.toml").exists():
        raise BadInput(exp_dir / "prereg.toml", "an experiment folder needs a prereg.toml to seal")
    present = {p.relative_to(exp_dir).as_posix(): p for p in sealed_files(exp_dir)}
    for rel in private:
        if rel not in present:
            raise BadInput(exp_dir / rel, "private file to bind is not in the folder")
    lines = [f"{_sha(p)}  {PRIVATE if rel in private else ''}{rel}" for rel, p in present.items()]
    out = exp_dir / MANIFEST
    write_text(out, "\n".join(lines) + "\n")
    return out


def read_manifest(exp_dir: Path) -> dict[str, tuple[str, bool]]:
    """relative path -> (sha256, private)."""
    path = Path(exp_dir) / MANIFEST
    if not path.exists():
        raise BadInput(path, "experiment is not sealed: run `python -m judge seal DIR` first")
    out = {}
    for no, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        sha, sep, rel = line.partition("  ")
        if not sep or len(sha) != 64:
            raise BadInput(path, "expected '<sha256>  <path>'", line=no)
        private = rel.startswith(PRIVATE)
        out[rel.removeprefix(PRIVATE)] = (sha, private)
    return out


def verify_seal(exp_dir: Path) -> dict[str, tuple[str, bool]]:
    """Check every sealed file: a change, an addition, or the removal of a non-private file is bad input."""
    exp_dir = Path(exp_dir)
    manifest = read_manifest(exp_dir)
    present = {p.relative_to(exp_dir).as_posix() for p in sealed_files(exp_dir)}
    for rel, (sha, private) in manifest.items():
        path = exp_dir / rel
        if rel not in present:
            if private:
                continue  # bound by hash only: private inputs stay out of the repository
            raise BadInput(path, "removed after sealing (in MANIFEST, not on disk, not marked private)")
        if _sha(path) != sha:
            raise BadInput(path, f"changed after sealing (MANIFEST sha256 {sha[:12]}…, file {_sha(path)[:12]}…)")
    extra = sorted(present - set(manifest))
    if extra:
        raise BadInput(exp_dir / extra[0], "added after sealing (not in MANIFEST)")
    verify_amendments(exp_dir)
    return manifest


def manifest_sha256(exp_dir: Path) -> str:
    return _sha(Path(exp_dir) / MANIFEST)


def verify_amendments(exp_dir: Path) -> list[dict]:
    path = Path(exp_dir) / AMENDMENTS
    prev = manifest_sha256(exp_dir)
    rows = []
    for no, rec in jsonl.read(path, required=("date", "text", "prev")):
        if rec["prev"] != prev:
            raise BadInput(path, "hash chain broken: amendment edited, inserted or removed", line=no, field="prev")
        prev = jsonl.link(rec)
        rows.append(rec)
    return rows


def amend(exp_dir: Path, text: str, now: dt.datetime | None = None, post_hoc: bool = False) -> dict:
    """Append an amendment. `post_hoc` records honestly that it was written after scoring began."""
    exp_dir = Path(exp_dir)
    rows = verify_amendments(exp_dir)
    prev = jsonl.link(rows[-1]) if rows else manifest_sha256(exp_dir)
    rec = {"n": len(rows) + 1, "date": (now or dt.datetime.now(dt.timezone.utc)).isoformat(timespec="seconds"),
           "text": text, "post_hoc": post_hoc, "prev": prev}
    with jsonl.Appender(exp_dir / AMENDMENTS) as w:
        w.write(rec)
    return rec


__all__ = ["seal", "verify_seal", "amend", "read_manifest", "manifest_sha256", "inside"]
