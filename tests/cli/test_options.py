"""One option style across commands, and errors in the CLI's terms (issue 41)."""

import json

import pytest
import typer
from test_help import commands
from typer.testing import CliRunner

from ctxsent.cli import app
from ctxsent.cli.options import cli_terms
from ctxsent.errors import InputError


def run_cli(*args: str):
    return CliRunner().invoke(app, list(args))


def test_a_setting_has_one_flag_in_every_command():
    root = typer.main.get_command(app)
    leaves = dict(commands(root))
    flags: dict[str, set[str]] = {}
    for command in leaves.values():
        for param in command.params:
            if param.param_type_name == "option":
                flags.setdefault(param.name, set()).add(param.opts[0])  # aliases may differ
    assert {name: opts for name, opts in flags.items() if len(opts) > 1} == {}
    takes = {path: {p.name for p in command.params} for path, command in leaves.items()}
    assert {"model", "accelerator"} <= takes["ctxsent serve"] & takes["ctxsent cascade tune"]
    for path in ("rank", "eval as2", "eval senteval", "eval ssp", "eval retrieval"):
        assert "accelerator" in takes[f"ctxsent {path}"], path  # every command that infers
    assert {"model", "overwrite"} <= takes["ctxsent export"]
    assert "model" in takes["ctxsent push"]
    assert "columns" in takes["ctxsent cascade tune"]
    for path in ("corpus build", "data squad-as2", "pipeline build", "cascade sequential"):
        assert "overwrite" in takes[f"ctxsent {path}"]


def test_serve_export_and_push_take_the_model_as_an_option_or_as_before(monkeypatch, tmp_path):
    import uvicorn

    import ctxsent.export
    import ctxsent.model_card
    import ctxsent.serving.app

    called = []
    monkeypatch.setattr(ctxsent.export, "export_model", lambda model, *_: called.append(model))
    monkeypatch.setattr(ctxsent.serving.app, "create_app", lambda model, *_, **__: model)
    monkeypatch.setattr(uvicorn, "run", lambda model, **_: called.append(model))
    monkeypatch.setattr(ctxsent.model_card, "push_to_hub", lambda m, *_: called.append(m) or "")
    out = ["--out", str(tmp_path / "x")]
    for command in (["export", *out], ["serve"], ["push", "--repo-id", "me/m"]):
        assert run_cli(*command, "--model", "bm25").exit_code == 0
        assert run_cli(*command, "bm25").exit_code == 0  # the older, positional form
        for wrong in ([], ["bm25", "--model", "bm25"]):
            refused = run_cli(*command, *wrong)
            assert refused.exit_code == 2 and "give the model once" in refused.output
    assert called == ["bm25"] * 6
    assert json.loads(run_cli("export", *out, "--model", "bm25").stdout)["model"] == "bm25"


@pytest.mark.parametrize(
    ("error", "line"),
    [
        (InputError("must be >= 1, got 0", field="top_k"), "--top-k: must be >= 1, got 0"),
        (InputError("bad", field="dev"), "--dev: bad"),  # the flag of parameter dev_file
        (InputError("bad", field="exclude-from"), "--exclude-from: bad"),
        (InputError("--alpha applies to cascades", field="alpha"), "--alpha applies to cascades"),
        (InputError("bad", field="no_such_option"), "field 'no_such_option': bad"),
        (InputError("empty", path="f.csv", line=2, field="question"), "f.csv:2: field 'question'"),
        (InputError("full; pass --overwrite (overwrite=True) to replace it", path="o"),
         "o: full; pass --overwrite to replace it"),
        (InputError("full; pass overwrite=True", path="o"), "o: full; pass --overwrite"),
        (InputError("pass --overwrite (seed=True)"), "pass --overwrite (--seed)"),
    ],
)  # fmt: skip
def test_errors_name_the_options_of_the_cli(error, line):
    assert cli_terms(error, str(error), typer.main.get_command(app)).startswith(line)


def test_an_output_error_tells_a_cli_user_the_option(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "mine.txt").write_text("not ctxsent's")
    (tmp_path / "squad.json").write_text('{"data": [], "version": "1.1"}')
    result = run_cli("data", "squad-as2", "--squad", str(tmp_path / "squad.json"),
                     "--out", str(tmp_path / "out"))  # fmt: skip
    assert result.exit_code == 2 and "overwrite=True" not in result.stderr
    assert result.stderr.strip().endswith("pass --overwrite to replace it")
