"""The node's logging set-up (edge/logs.py)."""

from __future__ import annotations

import io
import logging

import pytest

from edge import logs


@pytest.fixture
def restored():
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    quiet = {name: logging.getLogger(name).level for name in ("httpx", "httpcore", "hpack")}
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name, was in quiet.items():
        logging.getLogger(name).setLevel(was)


def test_the_http_clients_header_lines_are_never_logged_even_at_debug(monkeypatch, restored):
    """httpcore logs each answer's headers at DEBUG (a session cookie, a provider's token):
    an operator's EDGE_LOG_LEVEL=DEBUG shows the node's own debug lines, never those."""
    monkeypatch.setenv("EDGE_LOG_LEVEL", "DEBUG")
    logs.configure()
    out = io.StringIO()
    logging.getLogger().handlers[0].setStream(out)  # type: ignore[attr-defined]
    logging.getLogger("edge.followups").debug("the node's own")
    logging.getLogger("httpcore.http11").debug("receive_response_headers: set-cookie cm_session=s")
    logging.getLogger("httpx").debug("the client's")
    logging.getLogger("httpx").warning("a client's warning")
    text = out.getvalue()
    assert "the node's own" in text and "a client's warning" in text
    assert "cm_session" not in text and "the client's\n" not in text
