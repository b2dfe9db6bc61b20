"""The one place a contract error becomes an HTTP status (CONTRACT section 7), and the
translation of the framework's own refusals (404, 405, 413, 415) and of the domain's invalid
input into contract errors. edge.http.middleware answers them all with the envelope."""

from __future__ import annotations

from typing import NoReturn

from quart import Quart
from werkzeug.exceptions import HTTPException

from edge import errors
from edge.domain.errors import InvalidInput
from edge.errors import ContractError, invalid

STATUS: dict[type[ContractError], int] = {
    errors.InvalidRequest: 400,
    errors.Unauthorized: 401,
    errors.QuotaExceeded: 402,
    errors.Forbidden: 403,
    errors.NotFound: 404,
    errors.MethodNotAllowed: 405,
    errors.Conflict: 409,
    errors.RequestTimeout: 408,
    errors.PayloadTooLarge: 413,
    errors.UnsupportedMediaType: 415,
    errors.InvalidTransition: 422,
    errors.RateLimited: 429,
    errors.Internal: 500,
    errors.ProviderError: 502,
    errors.Unavailable: 503,
}

_BY_STATUS = {status: kind for kind, status in STATUS.items()}
_HTTP_CODES = {
    400: ("invalid_request", "The request is malformed."),
    404: ("not_found", "No such endpoint."),
    405: ("method_not_allowed", "This endpoint does not take that method."),
    413: ("payload_too_large", "The body is larger than this endpoint accepts."),
    415: ("unsupported_media_type", "Send the body as application/json."),
}


def status_of(error: ContractError) -> int:
    for kind in type(error).__mro__:
        status = STATUS.get(kind)
        if status is not None:
            return status
    return 500


def no_such_endpoint() -> ContractError:
    code, message = _HTTP_CODES[404]
    return errors.NotFound(code, message)


def method_not_allowed(allow: str) -> ContractError:
    code, message = _HTTP_CODES[405]
    return errors.MethodNotAllowed(code, message, headers={"Allow": allow})


def payload_too_large() -> ContractError:
    code, message = _HTTP_CODES[413]
    return errors.PayloadTooLarge(code, message)


def from_http_exception(exc: HTTPException) -> ContractError:
    status = exc.code or 500
    if status == 405:
        return method_not_allowed(", ".join(sorted(getattr(exc, "valid_methods", None) or [])))
    code, message = _HTTP_CODES.get(status, ("http_error", exc.description or "HTTP error."))
    return _BY_STATUS.get(status, ContractError)(code, message)


def _raise_http_exception(exc: HTTPException) -> NoReturn:
    raise from_http_exception(exc) from None


def _raise_invalid_input(exc: InvalidInput) -> NoReturn:
    raise invalid(exc.message, exc.field, exc.code) from None


def install(app: Quart) -> None:
    """Quart's refusals and the domain's InvalidInput leave Quart as contract errors; with
    ``PROPAGATE_EXCEPTIONS`` every error reaches the middleware, which answers it."""
    app.config["PROPAGATE_EXCEPTIONS"] = True
    app.register_error_handler(HTTPException, _raise_http_exception)
    app.register_error_handler(InvalidInput, _raise_invalid_input)
