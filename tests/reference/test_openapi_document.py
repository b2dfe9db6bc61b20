"""The document is valid OpenAPI 3.1, the checked-in copy is the node's, and the document and
the node's routes name the same operations: one source of truth."""

from __future__ import annotations

import json
from pathlib import Path

from openapi_spec_validator import validate

from edge import dashboard
from edge.http.app import create_app, served_routes
from edge.http.openapi.document import document, document_bytes

CHECKED_IN = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"
METHODS = {"get", "put", "post", "patch", "delete"}


def documented_routes() -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, item in document()["paths"].items()
        for method in item
        if method in METHODS
    }


def test_the_document_is_valid_openapi_3_1() -> None:
    doc = document()
    assert doc["openapi"].startswith("3.1")
    validate(doc)


def test_docs_openapi_json_is_the_document_the_node_serves() -> None:
    assert CHECKED_IN.read_bytes() == document_bytes(), (
        "docs/openapi.json is stale: regenerate it with "
        "python -c 'import edge.http.openapi.document as d; "
        'open("docs/openapi.json", "wb").write(d.document_bytes())\''
    )


def test_every_route_is_documented_and_every_documented_route_exists() -> None:
    served = served_routes(create_app(None, dashboard.PAGES))  # type: ignore[arg-type]
    documented = documented_routes()
    assert served - documented == set(), "routes the document lacks"
    assert documented - served == set(), "documented routes the node does not serve"


def test_every_operation_answers_with_the_contract_headers_and_error_envelope() -> None:
    for path, item in document()["paths"].items():
        for method, op in item.items():
            for status, answer in op["responses"].items():
                assert "Cm-Request-Id" in answer.get("headers", {}), (method, path, status)
                if int(status) >= 400:
                    schema = answer["content"]["application/json"]["schema"]
                    assert schema["allOf"][0] == {"$ref": "#/components/schemas/Error"}


def test_operation_ids_are_unique_and_links_name_real_operations() -> None:
    ops = [op for item in document()["paths"].values() for op in item.values()]
    ids = [op["operationId"] for op in ops]
    assert len(ids) == len(set(ids))
    links = [
        link
        for op in ops
        for answer in op["responses"].values()
        for link in (answer.get("links") or {}).values()
    ]
    assert {link["operationId"] for link in links} <= set(ids)
    checkout = document()["paths"]["/api/checkout/{provider}/{projectId}"]["post"]
    targets = {link["operationId"] for link in checkout["responses"]["201"]["links"].values()}
    assert {"getStatus", "getTransaction"} <= targets


def test_the_document_is_json_the_node_can_parse_back() -> None:
    assert json.loads(document_bytes()) == document()
