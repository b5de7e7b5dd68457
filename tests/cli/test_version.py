from importlib.metadata import version

from typer.testing import CliRunner

from ctxsent.cli import app


def test_version_prints_the_installed_version_and_exits():
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"ctxsent {version('ctxsent')}\n"
