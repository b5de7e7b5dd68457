"""``ctxsent serve MODEL``: run the HTTP service with uvicorn."""

from __future__ import annotations

from typing import Annotated, Literal

import typer

from ctxsent.cli.options import AcceleratorOption, InferencePrecisionOption, finite, positive


def serve(
    model: Annotated[
        str, typer.Argument(help="bm25 | bi-encoder[:BACKBONE] | a saved ctxsent model folder")
    ],
    host: Annotated[str, typer.Option(help="interface to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="TCP port")] = 8000,
    max_candidates: Annotated[
        int, typer.Option(min=1, help="candidates, sentences or texts per request (more: 413)")
    ] = 1000,
    max_chars: Annotated[int, typer.Option(min=1, help="characters per text (more: 413)")] = 5000,
    max_document_chars: Annotated[
        int, typer.Option(min=1, help="characters per document (more: 413)")
    ] = 200_000,
    max_batch: Annotated[
        int,
        typer.Option(
            min=1, help="candidates per model call; larger requests are split into chunks"
        ),
    ] = 256,
    chunk_chars: Annotated[
        int,
        typer.Option(min=1, help="characters per chunk of a split request (others wait for one)"),
    ] = 10_000,
    max_wait_ms: Annotated[
        float,
        typer.Option(
            min=0, callback=finite, help="how long a request waits for others to batch with"
        ),
    ] = 5.0,
    batch_size: Annotated[int, typer.Option(min=1, help="records per forward pass")] = 64,
    timeout_s: Annotated[
        float,
        typer.Option(
            callback=positive, help="seconds a request may wait for its answer (more: 504)"
        ),
    ] = 120.0,
    read_timeout_s: Annotated[
        float,
        typer.Option(
            callback=positive,
            help="seconds a client has to send a request's head, and its body",
        ),
    ] = 30.0,
    api_key: Annotated[
        str | None,
        typer.Option(
            envvar="CTXSENT_API_KEY",
            help="require 'Authorization: Bearer KEY' on every endpoint but /health and docs",
        ),
    ] = None,
    cors_origin: Annotated[
        list[str] | None,
        typer.Option(help="a web origin whose pages may call the service (repeatable)"),
    ] = None,
    accelerator: AcceleratorOption = "auto",
    precision: InferencePrecisionOption = "auto",
    log_level: Annotated[
        Literal["critical", "error", "warning", "info", "debug", "trace"],
        typer.Option(help="uvicorn's log level"),
    ] = "info",
) -> None:
    """Serve a model over HTTP. A ranker: POST /rank, /rerank (TEI or Cohere shape),
    /v1/rerank, /v2/rerank (Cohere/Jina). A sentence encoder: POST /encode, /embed (TEI),
    /v1/embeddings (OpenAI). Both for a bi-encoder; always GET /health, /info (TEI),
    /metrics (Prometheus); docs at /docs."""
    import uvicorn

    from ctxsent.serving.app import BatchConfig, create_app
    from ctxsent.serving.limits import ServeLimits
    from ctxsent.serving.server import is_loopback, uvicorn_options

    if api_key is not None and not api_key.strip():
        raise typer.BadParameter("the API key is empty", param_hint="'--api-key'")
    try:
        limits = ServeLimits(
            max_candidates=max_candidates,
            max_chars=max_chars,
            max_document_chars=max_document_chars,
            max_batch=max_batch,
            chunk_chars=chunk_chars,
            timeout_s=timeout_s,
            read_timeout_s=read_timeout_s,
        )
    except ValueError as err:
        raise typer.BadParameter(str(err)) from None
    if api_key is None and not is_loopback(host):
        typer.echo(
            f"warning: serving on {host} without an API key: anyone who can reach it can use "
            "it (set --api-key or CTXSENT_API_KEY)",
            err=True,
        )
    batching = BatchConfig(max_wait_ms, batch_size)
    app = create_app(
        model,
        limits,
        batching,
        api_key,
        cors_origin or (),
        precision=precision,
        accelerator=accelerator,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level, **uvicorn_options(read_timeout_s))
