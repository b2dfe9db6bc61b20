"""Every error leaves as CONTRACT section 7's envelope, including the framework's own 404, 405,
413 and 415, and an unexpected fault is ``500 internal`` with the request id, never a trace."""

from __future__ import annotations

import logging

from quart import Quart, Response, request
from werkzeug.exceptions import HTTPException

from edge.domain.errors import InvalidInput
from edge.failures import Failure, invalid
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


def render_failure(failure: Failure) -> Response:
    return json_response(failure.body(), failure.status, failure.headers)


def _on_failure(failure: Failure) -> Response:
    if failure.status == 500:  # an actor crashed: the request id is what the merchant quotes
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
    return render_failure(Failure(status, code, message, headers=headers))


def _on_unexpected(exc: Exception) -> Response:
    log.error(
        "unexpected fault in %s %s (request %s)",
        request.method,
        request.path,
        request_id(),
        exc_info=exc,
    )
    return render_failure(
        Failure(
            500,
            "internal",
            "An unexpected fault; it has been logged. Quote the request id when reporting it.",
            extra={"requestId": request_id()},
        )
    )


def install(app: Quart) -> None:
    app.register_error_handler(Failure, _on_failure)
    app.register_error_handler(InvalidInput, _on_invalid_input)
    app.register_error_handler(HTTPException, _on_http_exception)
    app.register_error_handler(Exception, _on_unexpected)
