"""Greenfield's error answers (btcpayserver@03345c28 BTCPayServer.Abstractions/Extensions/
GreenfieldExtensions.cs): ``CreateAPIError`` is ``{code, message}`` (400 unless a status is
given), ``CreateValidationError`` a 422 list of ``{path, message}`` whose path is the C#
property's name (``nameof(request.RefundVariant)``)."""

from __future__ import annotations

from typing import Any


class GreenfieldError(ValueError):
    """An API answer in Greenfield's error shape: ``{code, message}``, or for a request that
    does not validate, a list of ``{path, message}`` with 422."""

    def __init__(self, status: int, code: str, message: str, path: str | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.path = status, code, message, path

    def response(self) -> tuple[Any, int]:
        if self.path is not None:
            return [{"path": self.path, "message": self.message}], self.status
        return {"code": self.code, "message": self.message}, self.status


def invalid(path: str, message: str) -> GreenfieldError:
    """``CreateValidationError`` with one error."""
    return GreenfieldError(422, "validation-error", message, path)
