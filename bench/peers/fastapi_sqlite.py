"""Peer 2 of ``make bench-peers``: the same merchant's app as ``fastapi_postgres`` on SQLite,
the way FastAPI's SQL tutorial sets SQLite up: a connection a request
(``check_same_thread=False``: FastAPI may open it in one worker thread and use it in another),
blocking calls in FastAPI's thread pool. The bench made the file with ``journal_mode=WAL``
(kept in the file); each connection sets ``synchronous=FULL``, so a commit is on disk before
the 200, as the node's is.

It runs in the peers' venv (``bench/results/peers-env``), served by ``uvicorn --workers 1``.
Settings, from the environment: ``DATABASE_PATH`` (the SQLite file), ``PROJECTS_FILE`` and
``STRIPE_API_KEY`` as for ``fastapi_postgres``. The routes and their SQL are that app's.
"""

from __future__ import annotations

import hmac
import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Annotated, Any

import stripe
from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

stripe.api_key = os.environ["STRIPE_API_KEY"]
PROJECTS: dict[str, dict[str, str]] = json.loads(Path(os.environ["PROJECTS_FILE"]).read_text())
DATABASE_PATH = os.environ["DATABASE_PATH"]

STORE_EVENT = (
    "INSERT INTO events (id, project, type, payload) VALUES (?, ?, ?, ?)"
    " ON CONFLICT (id) DO NOTHING"
)
MARK_PAID = (
    "UPDATE orders SET status = 'paid', updated_at = CURRENT_TIMESTAMP"
    " WHERE id = ? AND project = ? AND amount_total = ? AND currency = ?"
    " AND status = 'pending'"
)
READ_ORDER = "SELECT id, status, amount_total, currency FROM orders WHERE id = ? AND project = ?"

app = FastAPI()
bearer = HTTPBearer()


def connect() -> sqlite3.Connection:
    conn = sqlite3.connect(DATABASE_PATH, check_same_thread=False)
    conn.execute("PRAGMA synchronous=FULL")
    return conn


def get_db() -> Iterator[sqlite3.Connection]:
    conn = connect()
    try:
        yield conn
    finally:
        conn.close()


def settings_of(project: str) -> dict[str, str]:
    settings = PROJECTS.get(project)
    if settings is None:
        raise HTTPException(status_code=404, detail="Unknown project")
    return settings


def record(project: str, event: Any, payload: bytes) -> None:
    """Store the event once and mark its order paid, in one transaction (``with conn``)."""
    with closing(connect()) as conn, conn:
        stored = conn.execute(STORE_EVENT, (event.id, project, event.type, payload.decode()))
        if stored.rowcount == 1 and event.type == "checkout.session.completed":
            session = event.data.object
            conn.execute(
                MARK_PAID,
                (session.client_reference_id, project, session.amount_total, session.currency),
            )


@app.post("/webhook/stripe/{project}")
async def stripe_webhook(
    project: str,
    request: Request,
    stripe_signature: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    settings = settings_of(project)
    payload = await request.body()  # the raw body: an async route, so the database in a thread
    try:
        event = stripe.Webhook.construct_event(
            payload, stripe_signature, settings["webhook_secret"]
        )
    except ValueError as exc:
        raise HTTPException(status_code=400, detail="Invalid payload") from exc
    except stripe.SignatureVerificationError as exc:
        raise HTTPException(status_code=400, detail="Invalid signature") from exc
    await run_in_threadpool(record, project, event, payload)
    return {"received": True}


@app.get("/status/{project}/{tx}")
def order_status(
    project: str,
    tx: str,
    credentials: Annotated[HTTPAuthorizationCredentials, Depends(bearer)],
    db: Annotated[sqlite3.Connection, Depends(get_db)],
) -> dict[str, Any]:
    settings = settings_of(project)
    if not hmac.compare_digest(credentials.credentials.encode(), settings["api_key"].encode()):
        raise HTTPException(status_code=401, detail="Invalid API key")
    row = db.execute(READ_ORDER, (tx, project)).fetchone()
    if row is None:
        raise HTTPException(status_code=404, detail="Order not found")
    order_id, status, amount_total, currency = row
    return {"id": order_id, "status": status, "amount": amount_total, "currency": currency}
