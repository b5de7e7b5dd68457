"""Property test of the whole HTTP API against its own OpenAPI schema (schemathesis): for
requests generated from the schema, valid and invalid alike, no answer is a 500, and
every 2xx answer matches the schema.

Bounded and derandomized, so a run takes seconds and every run tries the same requests.
"""

from __future__ import annotations

import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import response_schema_conformance

from ctxsent.models.ranker_base import As2Ranker
from ctxsent.serving.app import create_app
from ctxsent.serving.limits import ServeLimits


class TinyModel(As2Ranker):
    """A fake model that ranks (word overlap with the question) and encodes (vowel counts)."""

    def predict(self, records, batch_size=64):
        return np.array(
            [len(set(r.question.split()) & set(r.candidate.split())) for r in records], float
        )

    def encode(self, texts, batch_size=64):
        return np.array([[text.count(v) for v in "aeiou"] for text in texts], np.float32)


LIMITS = ServeLimits(max_candidates=50, max_chars=300, max_document_chars=3000, max_batch=8)


@pytest.fixture(scope="module", params=["tiny", "bm25", "cascade"])
def app(request):
    """The service over a fake ranker-encoder, BM25 (each request alone) or a tiny cascade
    (alpha, requests never split), with small limits so that 413s are reached too."""
    if request.param == "cascade":
        return create_app(request.getfixturevalue("tiny_cascade"), LIMITS)
    return create_app(TinyModel() if request.param == "tiny" else "bm25", LIMITS)


def test_no_request_gets_a_500(app):
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    requests = schema.as_strategy(GenerationMode.POSITIVE) | schema.as_strategy(
        GenerationMode.NEGATIVE
    )

    @given(case=requests)
    @settings(
        max_examples=100,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    def check(case):
        response = case.call()
        assert response.status_code < 500, (response.status_code, response.text, case.body)
        if response.status_code < 300:
            case.validate_response(response, checks=[response_schema_conformance])

    check()
