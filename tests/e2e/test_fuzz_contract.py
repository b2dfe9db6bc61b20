"""Fuzzing every endpoint of the contract through a real node (issue: hardening).

Hypothesis sends requests built from the contract's paths, queries, headers and bodies, with
hostile values in every place: wrong types, numbers beyond any bound, deep nesting, lone
surrogates, bytes that are not UTF-8, ids of every shape. For every answer:
- never a 5xx (the simulator behind Stripe is healthy, so even a 502 would be the node's fault);
- every refusal is the contract's envelope, and every answer carries ``Cm-Request-Id``;
- a refused request changes nothing stored (a digest of every store database before and after;
  only the list of refused webhook deliveries, which the contract keeps on purpose, may grow).
"""

from __future__ import annotations

import hashlib
import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from support.client import bearer
from support.nodes import NodeProcess
from support.waits import bound

from edge.node import STORE_DIR
from edge.store import keys
from edge.store.engine import DATABASES
from edge.store.lmdb.store import Store, open_environment

SNAKE = re.compile(r"[a-z][a-z0-9_]*")
SUB = "sub_01JD0000000000000000000000"

# -- hostile values ---------------------------------------------------------------------------

numbers = st.one_of(
    st.integers(),
    st.integers(min_value=10**17, max_value=10**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, -1, 1e308, 2**70, 0.001]),
)
texts = st.one_of(
    st.text(max_size=40),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz_-0123456789", max_size=30),
    st.sampled_from(["", " ", "book", "pro-monthly", "EUR", "test", "live", "x" * 3000]),
)
scalars = st.one_of(st.none(), st.booleans(), numbers, texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(texts, inner, max_size=5)),
    max_leaves=12,
)
FIELDS = [
    "productId", "quantity", "metadata", "customerRef", "successUrl", "cancelUrl", "txId",
    "returnUrl", "name", "allowedOrigins", "tier", "kind", "amount", "currency", "interval",
    "overrides", "enabled", "label", "order", "test", "live", "mode", "note", "provider",
    "eventType", "type", "id", "data",
]  # fmt: skip
objects = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=6)


@st.composite
def bodies(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["object", "json", "bytes", "surrogate", "deep", "empty"]))
    if kind == "object":
        return json.dumps(draw(objects)).encode()
    if kind == "json":
        return json.dumps(draw(json_values)).encode()
    if kind == "bytes":
        return draw(st.binary(max_size=200))
    if kind == "surrogate":
        field = draw(st.sampled_from(FIELDS))
        return b'{"%s": "\\ud800", "metadata": {"customerRef": "\\udfff"}}' % field.encode()
    if kind == "deep":
        depth = draw(st.integers(min_value=50, max_value=5000))
        return b"[" * depth + b"]" * depth
    return b""


# -- paths ----------------------------------------------------------------------------------


@st.composite
def segments(draw: st.DrawFn, valid: str) -> str:
    """A path segment: the valid id, or something else of every shape."""
    choice = draw(st.sampled_from(["valid", "valid", "text", "long", "odd"]))
    if choice == "valid":
        return valid
    if choice == "text":
        return quote(draw(st.text(min_size=1, max_size=30)), safe="")
    if choice == "long":
        return "a" * draw(st.integers(min_value=100, max_value=5000))
    return draw(st.sampled_from(["%00", "..", "%2e%2e", "tx_", "prj_", "sub_x", "%ff%fe", "-"]))


QUERY_NAMES = ["wait", "version", "limit", "after", "status", "reference", "mode", "x"]


@st.composite
def queries(draw: st.DrawFn) -> str:
    pairs = draw(
        st.lists(
            st.tuples(
                st.sampled_from(QUERY_NAMES),
                st.one_of(
                    st.integers().map(str),
                    st.sampled_from(["9" * 4301, "-1", "1e3", "0x10", "", "pending", "tx_x"]),
                    st.text(max_size=20),
                ),
            ),
            max_size=3,
        )
    )
    if not pairs:
        return ""
    return "?" + "&".join(f"{name}={quote(value, safe='')}" for name, value in pairs)


@dataclass
class Shop:
    """What the fuzzing aims at: the demo's project (Stripe on its simulator, pay by mail), a
    test key, the operator's token and a transaction."""

    project_id: str
    test_key: str
    admin_token: str
    tx_id: str


def requests(shop: Shop) -> st.SearchStrategy[tuple[str, str, dict[str, Any], bytes]]:
    pid, tx = shop.project_id, shop.tx_id

    @st.composite
    def build(draw: st.DrawFn) -> tuple[str, str, dict[str, Any], bytes]:
        p = draw(segments(pid))
        t = draw(segments(tx))
        templates = [
            ("GET", f"/status/{p}/{t}"),
            ("GET", f"/api/projects/{p}/public-info"),
            ("POST", f"/api/checkout/stripe/{p}"),
            ("POST", f"/api/checkout/manual/{p}"),
            ("POST", f"/api/checkout/{draw(segments('paypal'))}/{p}"),
            ("POST", f"/webhook/stripe/{p}"),
            ("POST", f"/webhook/{draw(segments('manual'))}/{p}"),
            ("POST", f"/api/subscriptions/{p}/{draw(segments(SUB))}/portal-url"),
            ("GET", f"/api/projects/{p}/transactions"),
            ("GET", f"/api/projects/{p}/transactions/{t}"),
            ("GET", f"/api/projects/{p}/events"),
            ("POST", f"/api/projects/{p}/transactions/{t}/mark-paid"),
            ("POST", f"/api/projects/{p}/transactions/{t}/cancel"),
            ("POST", "/api/manage/projects"),
            ("GET", f"/api/manage/projects/{p}"),
            ("PATCH", f"/api/manage/projects/{p}"),
            ("PUT", f"/api/manage/projects/{p}/products/{draw(segments('book'))}"),
            ("DELETE", f"/api/manage/projects/{p}/products/{draw(segments('nope'))}"),
            ("PUT", f"/api/manage/projects/{p}/providers/{draw(segments('stripe'))}"),
            ("POST", f"/api/manage/projects/{p}/keys"),
            ("GET", f"/api/manage/projects/{p}/keys"),
            ("DELETE", f"/api/manage/projects/{p}/keys/{draw(segments('key_x'))}"),
            ("GET", f"/api/manage/projects/{p}/usage"),
            ("GET", f"/api/manage/projects/{p}/deliveries"),
            ("POST", "/api/manage/trigger"),
            ("GET", "/.well-known/cm-signing-keys"),
            ("GET", f"/static/icons/{draw(segments('card.svg'))}"),
            ("GET", f"/button/{draw(segments('v1-x.js'))}"),
            ("GET", f"/{draw(segments('nope'))}"),
        ]  # fmt: skip
        method, path = draw(st.sampled_from(templates))
        method = draw(st.sampled_from([method, method, method, "GET", "PUT", "OPTIONS", "HEAD"]))
        headers: dict[str, Any] = {}
        auth = draw(st.sampled_from(["none", "key", "admin", "junk"]))
        if auth == "key":
            headers.update(bearer(shop.test_key))
        elif auth == "admin":
            headers.update(bearer(shop.admin_token))
        elif auth == "junk":
            headers["Authorization"] = draw(
                st.sampled_from(
                    ["Bearer", "Basic x", "Bearer cmk_test_nope", "Bearer " + "k" * 600]
                )
            )
        if draw(st.booleans()):
            headers["Content-Type"] = draw(
                st.sampled_from(
                    ["application/json", "text/plain", "application/json; charset=latin-1", ""]
                )
            )
        if draw(st.booleans()):
            headers["Cm-Version"] = draw(st.sampled_from(["2026-11-21", "1999-01-01", "x"]))
        if draw(st.booleans()):
            headers["Idempotency-Key"] = draw(st.sampled_from(["k1", "k" * 300, "é".encode()]))
        if draw(st.booleans()):
            headers["Origin"] = draw(
                st.sampled_from(["https://shop.example", "null", "http://evil"])
            )
        body = draw(bodies()) if method not in ("GET", "HEAD") else b""
        return method, path + draw(queries()), headers, body

    return build()


def _digest(store: Store) -> str:
    """Every stored key and value, except the refused deliveries the contract keeps."""
    out = hashlib.sha256()
    for db in DATABASES:
        with store.env.begin(db=store.dbs[db], buffers=False) as txn:
            for key, value in txn.cursor():
                kind = key[keys.PROJECT_ID_LEN : keys.PROJECT_ID_LEN + 1]
                if db == "records" and kind == keys.REJECTED:
                    continue
                out.update(db.encode() + key + b"\0" + value)
    return out.hexdigest()


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[NodeProcess, Shop, Store]]:
    """``edge serve --demo`` in a process of its own; its store read from here (LMDB readers
    in other processes see each commit)."""
    data = tmp_path_factory.mktemp("fuzz") / "data"
    node = NodeProcess(data, args=("--demo",)).start()
    try:
        token = node.admin_token
        deadline = time.monotonic() + bound(20)
        while not (data / "demo.json").exists():  # the node serves before the demo is wired
            assert time.monotonic() < deadline, node.log.read_text()
            time.sleep(0.05)
        project_id = json.loads((data / "demo.json").read_text())["projectId"]
        with httpx.Client(base_url=node.url, timeout=bound(30.0)) as http:
            key = http.post(
                f"/api/manage/projects/{project_id}/keys",
                json={"mode": "test", "name": "fuzz"},
                headers=bearer(token),
            ).json()["key"]
            tx = http.post(
                f"/api/checkout/manual/{project_id}",
                json={"productId": "book"},
                headers=bearer(key),
            ).json()["txId"]
        env = open_environment(data / STORE_DIR, 64 * 2**30, readonly=True)
        try:
            yield node, Shop(project_id, key, token, tx), Store(env)
        finally:
            env.close()
    finally:
        node.terminate()


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    database=None,
)
@given(data=st.data())
def test_no_request_of_any_shape_gets_a_5xx_a_bare_error_or_changes_state_when_refused(
    demo: tuple[NodeProcess, Shop, Store], data: st.DataObject
) -> None:
    node, shop, store = demo
    method, path, headers, body = data.draw(requests(shop))
    before = _digest(store)
    with httpx.Client(base_url=node.url, timeout=bound(30.0)) as http:
        answer = http.request(method, path, headers=headers, content=body)
    where = f"{method} {path[:200]} {headers} {body[:200]!r}"
    event(f"{method} /{'/'.join(path.split('?')[0].split('/')[1:3])[:40]} {answer.status_code}")
    assert answer.status_code < 500, (where, answer.status_code, answer.text[:500])
    assert answer.headers.get("cm-request-id"), where
    if answer.status_code >= 400:
        if method != "HEAD":
            error = answer.json()["error"]
            assert SNAKE.fullmatch(error["code"]) and isinstance(error["message"], str), where
            assert isinstance(error.get("retryable", False), bool), where
        assert _digest(store) == before, (where, answer.status_code, answer.text[:300])
