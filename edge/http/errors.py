"""Every error leaves as CONTRACT section 7's envelope, including the framework's own 404, 405,
413 and 415, and an unexpected fault is ``500 internal`` with the request id, never a trace."""

from __future__ import annotations

import logging

from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException

from edge import errors
from edge.domain.errors import InvalidInput
from edge.errors import ContractError, Internal, invalid
from edge.http.jsonio import json_response
from edge.http.request_ids import request_id

log = logging.getLogger("edge.http")

_HTTP_CODES = {
    400: ("invalid_request", "The request is malformed."),
    404: ("not_found", "No such endpoint."),
    405: ("method_not_allowed", "This endpoint does not take that method."),
    413: ("payload_too_large", "The body is larger than this endpoint accepts."),
    415: ("unsupported_media_type", "Send the body as application/json."),
}


STATUS: dict[type[ContractError], int] = {
    errors.InvalidRequest: 400,
    errors.Unauthorized: 401,
    errors.QuotaExceeded: 402,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.MethodNotAllowed: 405,
    errors.Conflict: 409,
    errors.PayloadTooLarge: 413,
    errors.UnsupportedMediaType: 415,
    errors.InvalidTransition: 422,
    errors.RateLimited: 429,
    errors.Internal: 500,
    errors.ProviderError: 502,
    errors.Unavailable: 503,
}
"""The one place a contract error becomes an HTTP status (CONTRACT section 7)."""

_BY_STATUS = {status: kind for kind, status in STATUS.items()}


def status_of(error: ContractError) -> int:
    for kind in type(error).__mro__:
        status = STATUS.get(kind)
        if status is not None:
            return status
    return 500


def render_failure(failure: ContractError) -> Response:
    return json_response(failure.body(), status_of(failure), failure.headers)


def _on_failure(failure: ContractError) -> Response:
    if isinstance(
        failure, Internal
    ):  # an actor crashed: the request id is what the merchant quotes
        failure.extra.setdefault("requestId", request_id())
    return render_failure(failure)


def _on_invalid_input(exc: InvalidInput) -> Response:
    return render_failure(invalid(exc.message, exc.field, exc.code))


def _on_http_exception(exc: HTTPException) -> Response:
    status = exc.code or 500
    code, message = _HTTP_CODES.get(status, ("http_error", exc.description or "HTTP error."))
    headers = {}
    if status == 405:
        allowed = getattr(exc, "valid_methods", None) or []
        headers["Allow"] = ", ".join(sorted(allowed))
    kind = _BY_STATUS.get(status, ContractError)
    return render_failure(kind(code, message, headers=headers))


def _on_unexpected(exc: Exception) -> Response:
    log.error(
        "unexpected fault in %s %s (request %s)",
        request.method,
        request.path,
        request_id(),
        exc_info=exc,
    )
    return render_failure(
        Internal(
            "internal",
            "An unexpected fault; it has been logged. Quote the request id when reporting it.",
            extra={"requestId": request_id()},
        )
    )


def install(app: Quart) -> None:
    app.register_error_handler(ContractError, _on_failure)
    app.register_error_handler(InvalidInput, _on_invalid_input)
    app.register_error_handler(HTTPException, _on_http_exception)
    app.register_error_handler(Exception, _on_unexpected)
