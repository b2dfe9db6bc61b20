"""The node's log lines: text for people, or one JSON object a line for machines
(``edge serve --log-format json``). Fields given as ``extra`` (the access log's method, path,
status, duration and request id) become keys of the JSON object."""

from __future__ import annotations

import json
import logging
import os
import time
from typing import Any

# what logging itself puts on every record: not extra fields
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        line.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str)


def configure(log_format: str = "text") -> None:
    """Logging for ``edge serve``: level from ``EDGE_LOG_LEVEL`` (INFO), UTC times."""
    handler = logging.StreamHandler()
    formatter: logging.Formatter
    if log_format == "json":
        formatter = JsonFormatter()
    else:
        formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    formatter.converter = time.gmtime
    handler.setFormatter(formatter)
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(os.environ.get("EDGE_LOG_LEVEL", "INFO"))
    # the HTTP client's own debug lines carry headers as sent and received (a session cookie,
    # a provider's token): never logged, whatever level the operator asks for
    for chatty in QUIET:
        logging.getLogger(chatty).setLevel(max(logging.INFO, root.level))


QUIET = ("httpx", "httpcore", "hpack")
