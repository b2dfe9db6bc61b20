"""The one exception the domain raises for bad input from outside."""

from __future__ import annotations


class InvalidInput(ValueError):
    """A value supplied by a caller breaks a rule of the contract.

    ``code`` is the snake_case error code of the contract's error body and
    ``field`` names the offending request field (None when no single field is
    at fault), so the HTTP layer can map it to a 400 without parsing messages.
    """

    def __init__(self, message: str, field: str | None = None, code: str = "invalid_request"):
        super().__init__(message)
        self.message = message
        self.field = field
        self.code = code

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, field={self.field!r}, code={self.code!r})"
