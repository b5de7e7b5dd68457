"""``python -m ctxsent.cli``: the same as the ``ctxsent`` command."""

from ctxsent.cli import main

main()
