"""Building blocks shared by every operation: the answers' headers, the error answers with the
contract's codes (CONTRACT 7), the version header and the security schemes."""

from __future__ import annotations

from typing import Any

from edge.http.jsonio import API_VERSION
from edge.http.openapi.schemas import Schema, ref

Operation = dict[str, Any]

PROJECT_KEY = "projectKey"
OPERATOR_TOKEN = "operatorToken"
SESSION = "session"

SECURITY_SCHEMES: dict[str, Schema] = {
    PROJECT_KEY: {
        "type": "http",
        "scheme": "bearer",
        "bearerFormat": "cmk_live_... or cmk_test_...",
        "description": "A project's API key: bound to one project and one mode; a cmk_test_ key "
        "sees only test transactions and makes every checkout a test one.",
    },
    OPERATOR_TOKEN: {
        "type": "http",
        "scheme": "bearer",
        "description": "The node operator's token (EDGE_ADMIN_TOKEN or the data dir's "
        "admin-token file): the management API, and everything a key may do, for every "
        "project and both modes.",
    },
    SESSION: {
        "type": "apiKey",
        "in": "cookie",
        "name": "cm_session",
        "description": "An account's dashboard session (POST /api/session): the management and "
        "merchant APIs of the account's own projects, both modes. A change made with it "
        "carries the session's token in the Cm-Csrf header, else 403 csrf_failed.",
    },
}
Security = list[dict[str, list[str]]]
KEY_OR_OPERATOR: Security = [{PROJECT_KEY: []}, {OPERATOR_TOKEN: []}, {SESSION: []}]
OPERATOR_OR_SESSION: Security = [{OPERATOR_TOKEN: []}, {SESSION: []}]
ANONYMOUS_OR_KEY: Security = [{}, {PROJECT_KEY: []}, {OPERATOR_TOKEN: []}]
OPERATOR: Security = [{OPERATOR_TOKEN: []}]
ANONYMOUS: Security = [{}]

HEADERS: dict[str, Schema] = {
    "Cm-Request-Id": {
        "description": "The request's id; quote it when reporting a problem.",
        "required": True,
        "schema": {"type": "string"},
    },
    "Cm-Version": {
        "description": "The API version the node speaks.",
        "required": True,
        "schema": {"const": API_VERSION},
    },
    "RateLimit-Limit": {
        "description": "Requests the bucket allows per period.",
        "schema": {"type": "integer"},
    },
    "RateLimit-Remaining": {
        "description": "Requests left in the bucket.",
        "schema": {"type": "integer"},
    },
    "RateLimit-Reset": {
        "description": "Seconds until the bucket is full again.",
        "schema": {"type": "integer"},
    },
    "Retry-After": {
        "description": "Seconds to wait before trying again.",
        "required": True,
        "schema": {"type": "integer"},
    },
    "Allow": {
        "description": "The methods this path takes.",
        "required": True,
        "schema": {"type": "string"},
    },
}

PARAMETERS: dict[str, Schema] = {
    "CmVersion": {
        "name": "Cm-Version",
        "in": "header",
        "required": False,
        "description": "Pins the API version; any other value is 400 unknown_version.",
        "schema": {"type": "string", "enum": [API_VERSION]},
    },
    "CmCsrf": {
        "name": "Cm-Csrf",
        "in": "header",
        "required": False,
        "description": "With a session cookie, a change needs the session's CSRF token here.",
        "schema": {"type": "string"},
    },
    "IdempotencyKey": {
        "name": "Idempotency-Key",
        "in": "header",
        "required": False,
        "description": "The same key with the same body within 24 hours answers the first "
        "answer again (Idempotent-Replayed: true) without a second transaction or refund; with "
        "another body, 409 idempotency_conflict. Checkouts and refunds keep their keys apart.",
        "schema": {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^[!-~]+$"},
    },
}

_STANDARD = {"Cm-Request-Id": {"$ref": "#/components/headers/Cm-Request-Id"}}
_STANDARD["Cm-Version"] = {"$ref": "#/components/headers/Cm-Version"}
RATE_HEADERS = {
    name: {"$ref": f"#/components/headers/{name}"}
    for name in ("RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset")
}

_DESCRIPTIONS = {
    400: "The request breaks a rule",
    401: "No credential, or a bad one",
    402: "Over the monthly quota",
    403: "A credential that may not do this",
    404: "Nothing here by that name",
    405: "Not a method this path takes",
    408: "The body came too slowly",
    409: "A conflict with what is stored",
    413: "The body is too large",
    415: "The body is not JSON",
    422: "The record's status does not allow it",
    429: "Too many requests",
    502: "The provider failed",
    503: "Unavailable for now; retry",
}


def headers(more: dict[str, Schema] | None = None, *, limited: bool = False) -> dict[str, Schema]:
    out = dict(_STANDARD)
    if limited:
        out.update(RATE_HEADERS)
    out.update(more or {})
    return out


def error(status: int, codes: list[str], *, limited: bool = False) -> Schema:
    """An error answer whose ``code`` is one of ``codes``."""
    extra: dict[str, Schema] = {}
    if status == 429:
        extra["Retry-After"] = {"$ref": "#/components/headers/Retry-After"}
    if status == 405:
        extra["Allow"] = {"$ref": "#/components/headers/Allow"}
    schema = {
        "allOf": [
            ref("Error"),
            {"properties": {"error": {"properties": {"code": {"enum": sorted(set(codes))}}}}},
        ]
    }
    return {
        "description": f"{_DESCRIPTIONS[status]}: {', '.join(sorted(set(codes)))}.",
        "headers": headers(extra, limited=limited),
        "content": {"application/json": {"schema": schema}},
    }


def json_answer(
    description: str, schema: Schema, *, limited: bool = False, example: Any = None, **more: Schema
) -> Schema:
    media: Schema = {"schema": schema}
    if example is not None:
        media["example"] = example
    return {
        "description": description,
        "headers": headers(more, limited=limited),
        "content": {"application/json": media},
    }


def path_param(name: str, schema: Schema, description: str) -> Schema:
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema,
    }


def query_param(name: str, schema: Schema, description: str) -> Schema:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
    }


def json_body(schema: Schema, *, required: bool = True) -> Schema:
    return {"required": required, "content": {"application/json": {"schema": schema}}}


def operation(
    operation_id: str,
    tag: str,
    summary: str,
    description: str,
    *,
    ok: dict[int, Schema],
    errors: dict[int, list[str]],
    parameters: list[Schema] | None = None,
    body: Schema | None = None,
    security: list[dict[str, list[str]]] | None = None,
    limited: bool = False,
    links: dict[str, Schema] | None = None,
) -> Operation:
    """One operation. Every operation takes ``Cm-Version``; one with a JSON body may also be
    refused for its media type, its size, its syntax and its speed."""
    errors = {status: list(codes) for status, codes in errors.items()}
    errors.setdefault(400, []).append("unknown_version")
    if body is not None:
        errors[400] += ["invalid_json", "invalid_request", "unknown_field"]
        errors.setdefault(408, []).append("request_timeout")
        errors.setdefault(413, []).append("payload_too_large")
        errors.setdefault(415, []).append("unsupported_media_type")
    if security and security != ANONYMOUS:
        errors.setdefault(401, []).append("unauthorized")
    responses: dict[str, Schema] = {str(status): answer for status, answer in ok.items()}
    if links:
        first = responses[str(min(ok))]
        first["links"] = links
    for status in sorted(errors):
        responses[str(status)] = error(status, errors[status], limited=limited)
    op: Operation = {
        "operationId": operation_id,
        "tags": [tag],
        "summary": summary,
        "description": description,
        "parameters": [*(parameters or []), {"$ref": "#/components/parameters/CmVersion"}],
    }
    if body is not None:
        op["requestBody"] = body
    op["responses"] = responses
    if security is not None:
        op["security"] = security
    return op
