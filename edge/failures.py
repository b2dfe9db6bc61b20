"""The one exception type that crosses layers: a contract error (CONTRACT section 7).

Actors and providers raise `Failure`; the HTTP layer renders it as
``{"error": {"code", "message", "field"?, "retryable"}}`` with its status code.
Anything else that escapes a handler is a bug and is answered ``500 internal``.
"""

from __future__ import annotations

from collections.abc import Mapping


class Failure(Exception):
    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        field: str | None = None,
        retryable: bool = False,
        headers: Mapping[str, str] | None = None,
        extra: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retryable = retryable
        self.headers = dict(headers or {})
        self.extra = dict(extra or {})

    def with_headers(self, headers: Mapping[str, str]) -> Failure:
        """A copy with more headers: one Failure may answer several callers (idempotency
        waiters), and each caller's headers are its own."""
        return Failure(
            self.status,
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


def project_not_found() -> Failure:
    return Failure(404, "project_not_found", "No project with this id.")


def invalid(message: str, field: str | None = None, code: str = "invalid_request") -> Failure:
    return Failure(400, code, message, field=field)


def unavailable(message: str = "The store cannot commit right now; retry.") -> Failure:
    return Failure(503, "unavailable", message, retryable=True)
