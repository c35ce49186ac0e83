"""ruff over the whole repository, with the rules in pyproject.toml ([tool.ruff.lint]): `make test` and CI run it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUFF = Path(sys.executable).with_name("ruff")


def _ruff(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([str(RUFF), "check", "--no-cache", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def test_ruff_passes_on_the_whole_repository():
    done = _ruff(".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_catches_an_unused_import(tmp_path):
    """The same configuration on a file with a fault: the check must fail (it is not vacuous)."""
    (tmp_path / "pyproject.toml").write_text((ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "faulty.py").write_text("import os\n", encoding="utf-8")
    done = _ruff(".", cwd=tmp_path)
    assert done.returncode == 1 and "F401" in done.stdout, done.stdout
