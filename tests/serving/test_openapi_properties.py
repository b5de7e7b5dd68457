"""Property test of the whole HTTP API against its own OpenAPI schema (schemathesis): for
requests generated from the schema, valid and invalid alike, on every route, no answer is
a 500, every status is declared, and every answer, error or not, matches its schema.

Bounded and derandomized, so a run takes seconds and every run tries the same requests.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi import checks

from ctxsent.models.ranker_base import As2Ranker
from ctxsent.serving.app import create_app
from ctxsent.serving.limits import ServeLimits

#: What every answer must satisfy (not the checks that want semantic refusals, such as an
#: empty question or a limit, declared in the schema).
CHECKS = [
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
    checks.negative_data_rejection,
]


class TinyModel(As2Ranker):
    """A fake model that ranks (word overlap with the question) and encodes (vowel counts)."""

    def predict(self, records, batch_size=64):
        return np.array(
            [len(set(r.question.split()) & set(r.candidate.split())) for r in records], float
        )

    def encode(self, texts, batch_size=64):
        return np.array([[text.count(v) for v in "aeiou"] for text in texts], np.float32)


LIMITS = ServeLimits(max_candidates=50, max_chars=300, max_document_chars=3000, max_batch=8)


@pytest.fixture(scope="module", params=["tiny", "bm25", "cascade", "keyed"])
def app(request):
    """The service over a fake ranker-encoder (every route), BM25 (each request alone), a
    tiny cascade (alpha, requests never split), or with an API key (401s), with small
    limits so that 413s are reached too."""
    if request.param == "cascade":  # fewer candidates: a transformer scores them
        limits = dataclasses.replace(LIMITS, max_candidates=8, max_document_chars=300)
        return create_app(request.getfixturevalue("tiny_cascade"), limits)
    key = "k" if request.param == "keyed" else None
    return create_app(TinyModel() if request.param != "bm25" else "bm25", LIMITS, api_key=key)


def test_every_answer_matches_the_openapi_document(app):
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
        case.validate_response(response, checks=CHECKS)

    check()


def test_every_route_declares_the_error_body_for_every_error_status(app):
    """Generated clients parse the errors the server sends: ``{"error", "problems"}``, also
    for 422 (FastAPI's own declaration is ``{"detail"}``, whose fields are all optional)."""
    for path, operations in app.openapi()["paths"].items():
        for operation in operations.values():
            errors = {s: r for s, r in operation["responses"].items() if s >= "400"}
            assert set(errors) == {"400", "401", "408", "413", "422", "500", "504"}, path
            for declared in errors.values():
                schema = declared["content"]["application/json"]["schema"]
                assert schema == {"$ref": "#/components/schemas/ErrorBody"}, path
