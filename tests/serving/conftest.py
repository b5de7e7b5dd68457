"""Fixtures for the service tests: tiny random rankers and an encoder, a live server."""

import threading
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
import torch
import uvicorn

from ctxsent.models.bi_encoder import BiEncoder
from ctxsent.models.cascade import CascadeRanker
from ctxsent.models.cross_encoder import CrossEncoderRanker
from ctxsent.serving.server import uvicorn_options
from synthetic import make_tiny_bert, spread_attention


@pytest.fixture(scope="session")
def live():
    """Runs an app under uvicorn: ``with live(app) as (url, port)``."""
    return serve_live


@contextmanager
def serve_live(app, read_timeout_s: float = 30.0) -> Iterator[tuple[str, int]]:
    """``app`` under uvicorn on a free loopback port with ``ctxsent serve``'s options:
    ``(base URL, port)``."""
    options = uvicorn_options(read_timeout_s)
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", **options)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    for _ in range(12_000):  # the bound only ends a hang
        if server.started:
            break
        thread.join(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", port
    finally:
        server.should_exit = True
        thread.join(60)


@pytest.fixture(scope="session")
def tiny_ranker(tiny_bert) -> CrossEncoderRanker:
    """A contextual tiny cross-encoder with random weights (fp32 for exact comparisons),
    whose scores depend on the input enough that its rankings are not ties."""
    torch.manual_seed(0)
    ranker = CrossEncoderRanker.from_backbone(str(tiny_bert), contextual=True, max_length=64)
    spread_attention(ranker.model.bert)
    ranker.precision = "fp32"
    return ranker.eval()


@pytest.fixture(scope="session")
def tiny_cascade(tmp_path_factory) -> CascadeRanker:
    torch.manual_seed(0)
    folder = make_tiny_bert(tmp_path_factory.mktemp("tiny4"), layers=4)
    return CascadeRanker.from_backbone(str(folder), max_length=64).eval()


@pytest.fixture(scope="session")
def tiny_encoder(tiny_bert) -> BiEncoder:
    from transformers import AutoModel, AutoTokenizer

    return BiEncoder(
        AutoModel.from_pretrained(tiny_bert).eval(),
        AutoTokenizer.from_pretrained(tiny_bert),
        max_length=64,
    )


@pytest.fixture(scope="session")
def tiny_cross_thought(tiny_bert):
    """A random 2-layer Cross-Thought encoder with one special token; short ``max_length``
    so that the tests also cover truncation."""
    from ctxsent.models.cross_thought import CrossThoughtConfig, CrossThoughtModel

    config = CrossThoughtConfig(backbone=str(tiny_bert), pretrained=False, max_length=24)
    return CrossThoughtModel.build(config, seed=3).eval()
