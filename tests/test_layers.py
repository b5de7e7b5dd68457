"""The import contracts (``[tool.importlinter]`` in pyproject.toml, run by ``make lint``) hold
for the code, and fail on an import that points up the layers or closes a circle inside a
package, at module level or inside a function."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def lint_imports(source: Path) -> subprocess.CompletedProcess:
    """``lint-imports`` with the project's contract on the ``ctxsent`` package in ``source``."""
    command = [Path(sys.executable).with_name("lint-imports"), "--no-cache", "--no-logo"]
    return subprocess.run(
        [*command, str(ROOT / "pyproject.toml")],
        env={**os.environ, "PYTHONPATH": str(source)},
        cwd=source,
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_import_points_down_the_layers():
    result = lint_imports(ROOT / "src")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ctxsent layers KEPT" in result.stdout and "no import circle KEPT" in result.stdout


def test_an_upward_import_or_a_circle_breaks_a_contract(tmp_path):
    package = shutil.copytree(ROOT / "src" / "ctxsent", tmp_path / "ctxsent")
    with (package / "errors.py").open("a") as handle:
        handle.write("\nfrom ctxsent.cli import app  # noqa: E402\n")
    with (package / "saving.py").open("a") as handle:
        handle.write("\n\ndef _hidden():\n    import ctxsent.models.cascade  # noqa: F401\n")
    with (package / "models" / "staged.py").open("a") as handle:  # cascade imports staged
        handle.write("\n\ndef _circle():\n    from ctxsent.models import cascade  # noqa: F401\n")
    result = lint_imports(tmp_path)
    assert result.returncode != 0
    assert "ctxsent.errors -> ctxsent.cli" in result.stdout
    assert "ctxsent.saving -> ctxsent.models.cascade" in result.stdout
    assert "no import circle BROKEN" in result.stdout
    assert "- .staged -> .cascade" in result.stdout
