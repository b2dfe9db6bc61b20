"""The fast lane reads a request only as h11 would (edge.http.plain_request): for any bytes,
either it declines, or h11 reads the very same request from them (method, target, headers,
body) with nothing left over. h11 is the oracle: it is what reads every other request."""

from __future__ import annotations

from typing import TypeVar

import h11
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from edge.http.plain_request import MAX_HEAD, read

T = TypeVar("T")


def mostly(usual: list[T], odd: list[T]) -> st.SearchStrategy[T]:
    """Usually one of ``usual``, sometimes one of ``odd``: requests near the lane's edge."""
    return st.integers(0, 9).flatmap(
        lambda i: st.sampled_from(odd) if i == 9 else st.sampled_from(usual)
    )


PATH = mostly(
    ["/status/prj_abc/tx_123", "/webhook/stripe/prj_abc", "/status/"],
    ["/status/a%20b/tx", "/webhooks/x", "/api/x", "//status/x", "/status/a b", "*", "/status/\\x"],
)
QUERY = mostly(["", "?wait=5", "?v=1&wait=2", "?mode=test", "?"], ["?a=%41", "?#x", "? x", "?a=<"])
METHOD = mostly(["GET", "HEAD", "POST"], ["PUT", "get", "OPTIONS", "GET "])
VERSION = mostly(["HTTP/1.1"], ["HTTP/1.0", "HTTP/2", "http/1.1", "HTTP/1.1 "])
NAME = mostly(
    ["Authorization", "X-Forwarded-For", "Stripe-Signature", "Accept", "X-Y_z.1~!#$%&'*+^`|"],
    [
        "Host",
        "Content-Length",
        "Transfer-Encoding",
        "Expect",
        "Connection",
        "Bad Name",
        "Host ",
        " Host",
        "X\x01",
        "\u00dc",
        "",
    ],
)
VALUE = st.integers(0, 9).flatmap(
    lambda i: (
        st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=20)
        if i < 6
        else st.sampled_from(
            ["example.com", "0", "5", "-1", "1e3", "chunked", "close", "keep-alive"]
        )
        if i < 8
        else st.sampled_from(["100-continue", " x ", "\tx\t", "a\x00b", "\u00e9", "\u0100"])
        if i < 9
        else st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FF), max_size=12)
    )
)
BODY = st.sampled_from([b"", b"hello", b'{"id":"evt_1"}', b"x" * 12])
EOL = mostly(["\r\n"], ["\n", "\r"])
SPACE = mostly(["", " "], ["  ", "\t", " \t"])


@st.composite
def requests(draw: st.DrawFn) -> bytes:
    eol = draw(EOL)
    method = draw(METHOD)
    line = f"{method} {draw(PATH)}{draw(QUERY)} {draw(VERSION)}"
    fields = draw(st.lists(st.tuples(NAME, VALUE), max_size=4))
    if draw(st.integers(0, 9)) < 9:  # hypothesis starts from 0: the usual case first
        fields.insert(draw(st.integers(0, len(fields))), ("Host", "edge.test"))
    body = draw(BODY) if method == "POST" or draw(st.integers(0, 5)) == 5 else b""
    if method == "POST" or draw(st.integers(0, 3)) == 3:
        off = draw(st.sampled_from([0, 0, 0, 0, 1, -1]))
        fields.append(("Content-Length", str(len(body) + off)))
    head = eol.join([line, *(f"{n}:{draw(SPACE)}{v}{draw(SPACE)}" for n, v in fields)])
    tail = draw(mostly([b""], [b"GET /status/a/b HTTP/1.1\r\nHost: x\r\n\r\n", b"\r\n", b"x"]))
    return head.encode("latin-1", "replace") + (eol * 2).encode() + body + tail


def h11_reads(data: bytes) -> tuple[h11.Request, bytes] | None:
    """The request and body h11 reads from ``data``, if it reads exactly one whole request
    and nothing more."""
    connection = h11.Connection(h11.SERVER, max_incomplete_event_size=16 * 1024)
    connection.receive_data(data)
    try:
        request = connection.next_event()
        if not isinstance(request, h11.Request):
            return None
        body = b""
        while True:
            event = connection.next_event()
            if isinstance(event, h11.Data):
                body += bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
            else:
                return None
        if (
            connection.next_event() not in (h11.NEED_DATA, h11.PAUSED)
            or connection.trailing_data[0]
        ):
            return None
    except h11.RemoteProtocolError:
        return None
    return request, body


@settings(max_examples=3000, deadline=None)
@given(requests())
@example(b"GET /status/prj_a/tx_b HTTP/1.1\r\nHost: x\r\n\r\n")
@example(b"POST /webhook/stripe/prj_a HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
def test_what_the_lane_reads_h11_reads_the_same(data: bytes) -> None:
    mine = read(data)
    event("read by the lane" if mine is not None else "declined")
    if mine is None:
        return
    theirs = h11_reads(data)
    assert theirs is not None, data
    request, body = theirs
    assert mine.method == request.method.decode()
    target = mine.path + (b"?" + mine.query_string if mine.query_string else b"")
    assert request.target in (target, target + b"?")
    assert mine.headers == list(request.headers)
    assert mine.body == body


@settings(max_examples=2000, deadline=None)
@given(st.binary(max_size=300))
def test_any_bytes_are_read_or_declined_never_a_fault(data: bytes) -> None:
    mine = read(data)
    if mine is not None:
        assert h11_reads(data) is not None


def test_the_usual_requests_take_the_lane() -> None:
    status = read(b"GET /status/prj_a/tx_b HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n\r\n")
    assert status is not None and status.headers[1] == (b"authorization", b"Bearer k")
    hook = read(
        b"POST /webhook/stripe/prj_a?x=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}"
    )
    assert hook is not None and (hook.body, hook.query_string) == (b"{}", b"x=1")


def test_what_would_need_more_than_one_read_or_h11s_judgement_is_declined() -> None:
    declined = [
        b"GET /status/prj_a/tx_b HTTP/1.1\r\nHost: x\r\n",  # not all there
        b"POST /webhook/s/p HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n{}",  # body to come
        b"GET /status/a/b HTTP/1.1\r\nHost: x\r\n\r\nGET /status/a/b HTTP/1.1\r\nHost: x\r\n\r\n",
        b"GET /status/a/b HTTP/1.1\r\n\r\n",  # no Host
        b"GET /status/a%20/b HTTP/1.1\r\nHost: x\r\n\r\n",  # to decode
        b"GET /status/a/b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        b"POST /webhook/s/p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        b"GET /status/a/b HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
        b"GET /api/projects/p/public-info HTTP/1.1\r\nHost: x\r\n\r\n",  # not a lane path
        b"GET /status/a/b HTTP/1.1\r\nHost: x\r\nX: " + b"y" * MAX_HEAD + b"\r\n\r\n",
    ]
    assert [read(data) for data in declined] == [None] * len(declined)
