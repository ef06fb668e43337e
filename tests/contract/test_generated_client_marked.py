"""The generated client says so: every file under clients/python/src starts with codegen.py's header, and git
marks the whole tree generated (so review tools fold it). The drift test (test_generated_client.py) checks the
contents; this one runs without the apps."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ROOT / "clients" / "python" / "src"


def _codegen():
    spec = importlib.util.spec_from_file_location("codegen", ROOT / "clients" / "python" / "codegen.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _generated_files() -> list[Path]:
    return sorted(p for p in SOURCES.rglob("*") if p.is_file() and "__pycache__" not in p.parts)


def test_every_generated_file_starts_with_the_header():
    header = _codegen().GENERATED_HEADER
    files = _generated_files()
    assert len(files) > 100
    unmarked = [str(p.relative_to(ROOT)) for p in files if not p.read_text(encoding="utf-8").startswith(header)]
    assert not unmarked, f"files without the generated header: {unmarked[:20]}"


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_gitattributes_marks_every_generated_file():
    paths = [str(p.relative_to(ROOT)) for p in _generated_files()]
    answer = subprocess.run(["git", "check-attr", "linguist-generated", "--stdin"], input="\n".join(paths),
                            cwd=ROOT, capture_output=True, text=True, check=True).stdout.splitlines()
    unmarked = [line for line in answer if not line.endswith(": linguist-generated: true")]
    assert len(answer) == len(paths) and not unmarked, unmarked[:20]
