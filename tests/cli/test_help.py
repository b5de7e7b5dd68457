"""Every command and every option of ``ctxsent`` says what it is (issue 24)."""

import typer

from ctxsent.cli import app


def commands(command, path: str = "ctxsent"):
    """``(path, command)`` of every leaf command under ``command`` (typer's own click)."""
    if hasattr(command, "commands"):  # a group
        for name, sub in command.commands.items():
            yield from commands(sub, f"{path} {name}")
    else:
        yield path, command


def test_every_command_and_option_has_help_text():
    leaves = dict(commands(typer.main.get_command(app)))
    assert {"ctxsent export", "ctxsent presets", "ctxsent finetune as2"} <= leaves.keys()
    undocumented = [path for path, command in leaves.items() if not command.help]
    bare = [
        f"{path} {param.name}"
        for path, command in leaves.items()
        for param in command.params
        if param.name != "help" and not getattr(param, "help", None)
    ]
    assert undocumented == [] and bare == []
