"""``ctxsent serve MODEL``: run the HTTP service with uvicorn."""

from __future__ import annotations

from typing import Annotated

import typer


def serve(
    model: Annotated[
        str, typer.Argument(help="bm25 | bi-encoder[:BACKBONE] | a saved ctxsent model folder")
    ],
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="TCP port")] = 8000,
    max_candidates: Annotated[
        int, typer.Option(help="candidates, sentences or texts per request (more: 413)")
    ] = 1000,
    max_chars: Annotated[int, typer.Option(help="characters per text (more: 413)")] = 5000,
    max_document_chars: Annotated[
        int, typer.Option(help="characters per document (more: 413)")
    ] = 200_000,
    max_batch: Annotated[
        int, typer.Option(help="candidates batched into one model call across requests")
    ] = 256,
    max_wait_ms: Annotated[
        float, typer.Option(help="how long a request waits for others to batch with")
    ] = 5.0,
    batch_size: Annotated[int, typer.Option(help="records per forward pass")] = 64,
    log_level: str = "info",
) -> None:
    """Serve a ranker over HTTP: POST /rank, POST /encode, GET /health; docs at /docs."""
    import uvicorn

    from ctxsent.serving.app import BatchConfig, create_app
    from ctxsent.serving.limits import ServeLimits

    try:
        limits = ServeLimits(max_candidates, max_chars, max_document_chars, max_batch)
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    app = create_app(model, limits, BatchConfig(max_wait_ms, batch_size))
    uvicorn.run(app, host=host, port=port, log_level=log_level)
