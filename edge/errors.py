"""The contract's errors (CONTRACT section 7), as one exception tree.

Actors, providers and the HTTP layer raise these by name; only ``edge.http.errors`` knows which
HTTP status each one is answered with. Anything else that escapes a handler is a bug and is
answered ``500 internal`` with the request id.

::

    ContractError                 code, message, field?, retryable, headers, extra
     +-- InvalidRequest           a request breaks a rule (invalid_request, url_not_allowed ...)
     +-- Unauthorized             no key, a bad key, a bad signature
     +-- QuotaExceeded            live checkouts past the period's quota
     +-- Forbidden                another project's key, a key on the management API
     +-- NotFound                 not_found, project_not_found, provider_not_enabled ...
     +-- MethodNotAllowed
     +-- Conflict                 tx_exists, idempotency_conflict, portal_unsupported ...
     +-- PayloadTooLarge
     +-- UnsupportedMediaType
     +-- InvalidTransition        a state the record cannot move from (mark-paid on failed)
     +-- RateLimited
     +-- Internal                 a fault of the node's own; logged with the request id
     +-- ProviderError            the provider's API failed (retryable)
     +-- Unavailable              the store cannot commit, the node is stopping (retryable)

Every error carries its own headers (``RateLimit-*``, ``Retry-After``, ``Allow``); one error may
answer several callers, so ``with_headers`` copies instead of changing it in place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from edge.domain import ids


class ContractError(Exception):
    code_default: ClassVar[str] = "internal"
    retryable_default: ClassVar[bool] = False

    def __init__(
        self,
        code: str | None = None,
        message: str = "",
        *,
        field: str | None = None,
        retryable: bool | None = None,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        self.code = code or self.code_default
        self.message = message or self.code
        super().__init__(f"{self.code}: {self.message}")
        self.field = field
        self.retryable = self.retryable_default if retryable is None else retryable
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def with_headers(self, headers: Mapping[str, str]) -> ContractError:
        """A copy with more headers: each caller's headers are its own."""
        return type(self)(
            self.code,
            self.message,
            field=self.field,
            retryable=self.retryable,
            headers={**self.headers, **headers},
            extra=self.extra,
        )

    def body(self) -> dict[str, object]:
        error: dict[str, object] = {"code": self.code, "message": self.message}
        if self.field is not None:
            error["field"] = self.field
        error["retryable"] = self.retryable
        error.update(self.extra)
        return {"error": error}


class InvalidRequest(ContractError):
    code_default = "invalid_request"


class Unauthorized(ContractError):
    code_default = "unauthorized"


class QuotaExceeded(ContractError):
    code_default = "quota_exceeded"


class Forbidden(ContractError):
    code_default = "forbidden"


class NotFound(ContractError):
    code_default = "not_found"


class MethodNotAllowed(ContractError):
    code_default = "method_not_allowed"


class Conflict(ContractError):
    code_default = "conflict"


class PayloadTooLarge(ContractError):
    code_default = "payload_too_large"


class RequestTimeout(ContractError):
    """The request's body came too slowly (CONTRACT 8): the connection is closed after it. The
    same request sent again at a client's pace is served: retryable."""

    code_default = "request_timeout"
    retryable_default = True


class UnsupportedMediaType(ContractError):
    code_default = "unsupported_media_type"


class InvalidTransition(ContractError):
    code_default = "invalid_transition"


class RateLimited(ContractError):
    code_default = "rate_limited"
    retryable_default = True


class Internal(ContractError):
    code_default = "internal"


class ProviderError(ContractError):
    code_default = "provider_error"
    retryable_default = True


class Unavailable(ContractError):
    code_default = "unavailable"
    retryable_default = True


ERRORS: dict[str, type[ContractError]] = {
    cls.__name__: cls
    for cls in (
        InvalidRequest,
        Unauthorized,
        QuotaExceeded,
        Forbidden,
        NotFound,
        MethodNotAllowed,
        Conflict,
        PayloadTooLarge,
        UnsupportedMediaType,
        InvalidTransition,
        RateLimited,
        Internal,
        ProviderError,
        Unavailable,
    )
}
"""Each error by its class name: how a remembered error (an idempotent answer) is stored."""


def project_not_found() -> NotFound:
    return NotFound("project_not_found", "No project with this id.")


def check_project_id(project_id: str) -> None:
    """``project_not_found`` for an id no project can have, before anything is looked up (an
    unknown well-formed id gets the same answer where its project is looked for)."""
    if not ids.is_project_id(project_id):
        raise project_not_found()


def tx_not_found() -> NotFound:
    """No such transaction in the project asked about, or none the caller's mode may see:
    one answer for both, so a key cannot probe the other mode's ids."""
    return NotFound("not_found", "No transaction with this id in this project.")


def invalid(
    message: str, field: str | None = None, code: str = "invalid_request"
) -> InvalidRequest:
    return InvalidRequest(code, message, field=field)


def unavailable(message: str = "The store cannot commit right now; retry.") -> Unavailable:
    return Unavailable("unavailable", message)
