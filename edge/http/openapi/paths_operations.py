"""Operations (CONTRACT 4.9): health, readiness, metrics, and this reference itself."""

from __future__ import annotations

from edge.http.openapi.common import (
    ANONYMOUS,
    OPERATOR,
    Operation,
    headers,
    json_answer,
    operation,
)
from edge.http.openapi.schemas import Schema, ref


def _content(media: str, description: str) -> Schema:
    return {
        "description": description,
        "headers": headers(),
        "content": {media: {"schema": {"type": "string"}}},
    }


def paths() -> dict[str, dict[str, Operation]]:
    return {
        "/healthz": {
            "get": operation(
                "healthz",
                "Operations",
                "The process answers",
                "Liveness.",
                security=ANONYMOUS,
                ok={200: json_answer("Alive.", ref("Health"))},
                errors={},
            )
        },
        "/readyz": {
            "get": operation(
                "readyz",
                "Operations",
                "The store is open and the writer commits",
                "Readiness: a probe write must become durable within 5 seconds.",
                security=ANONYMOUS,
                ok={200: json_answer("Ready.", ref("Health"))},
                errors={503: ["unavailable"]},
            )
        },
        "/metrics": {
            "get": operation(
                "metrics",
                "Operations",
                "Prometheus metrics",
                "For the operator: its token, or an address in EDGE_METRICS_ALLOW.",
                security=OPERATOR,
                ok={200: _content("text/plain", "Prometheus text format.")},
                errors={},
            )
        },
        "/openapi.json": {
            "get": operation(
                "openapi",
                "Operations",
                "This document",
                "The OpenAPI 3.1 document of every endpoint.",
                security=ANONYMOUS,
                ok={200: json_answer("The document.", {"type": "object"})},
                errors={},
            )
        },
        "/docs": {
            "get": operation(
                "docs",
                "Operations",
                "This reference, readable",
                "Rendered by the node from /openapi.json; no script.",
                security=ANONYMOUS,
                ok={200: _content("text/html", "The reference.")},
                errors={},
            )
        },
        "/static/docs.css": {
            "get": operation(
                "docsStyle",
                "Operations",
                "The reference's style sheet",
                "Readable on a phone and a desk; cached for 5 minutes.",
                security=ANONYMOUS,
                ok={200: _content("text/css", "The style sheet.")},
                errors={},
            )
        },
    }
