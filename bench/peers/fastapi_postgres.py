"""Peer 1 of ``make bench-peers``: a merchant's own Stripe webhook and order status, written as
FastAPI's, Stripe's and psycopg's documentation show, on PostgreSQL.

It is not part of edge: it runs in a venv of its own (``bench/results/peers-env``, from
``requirements.txt`` beside it), served by ``uvicorn --workers 1``, to measure what the node
costs against what a merchant would write instead. The bench gives it its settings through the
environment, as such an app gets them:

- ``DATABASE_URL``: PostgreSQL (``events`` and ``orders`` made and filled by the bench);
- ``PROJECTS_FILE``: JSON, ``{project id: {"api_key": ..., "webhook_secret": "whsec_..."}}``;
- ``STRIPE_API_KEY``: the account's secret key (not used to call Stripe here).

The webhook verifies the raw body with ``stripe.Webhook.construct_event`` and, in one
transaction, stores the event once (``ON CONFLICT (id) DO NOTHING``: a redelivery is answered
200 and changes nothing) and marks the order the Checkout Session names paid when its amount
and currency match. The status read checks the bearer key in constant time and reads the order
by its primary key.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any

import stripe
from fastapi import Depends, FastAPI, Header, HTTPException, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from psycopg_pool import AsyncConnectionPool

stripe.api_key = os.environ["STRIPE_API_KEY"]
PROJECTS: dict[str, dict[str, str]] = json.loads(Path(os.environ["PROJECTS_FILE"]).read_text())
# node-postgres's default pool size, so both PostgreSQL peers hold as many connections
pool = AsyncConnectionPool(os.environ["DATABASE_URL"], min_size=4, max_size=10, open=False)

STORE_EVENT = (
    "INSERT INTO events (id, project, type, payload) VALUES (%s, %s, %s, %s)"
    " ON CONFLICT (id) DO NOTHING"
)
MARK_PAID = (
    "UPDATE orders SET status = 'paid', updated_at = now()"
    " WHERE id = %s AND project = %s AND amount_total = %s AND currency = %s"
    " AND status = 'pending'"
)
READ_ORDER = "SELECT id, status, amount_total, currency FROM orders WHERE id = %s AND project = %s"


@asynccontextmanager
async def lifespan(_: FastAPI) -> AsyncIterator[None]:
    await pool.open()
    yield
    await pool.close()


app = FastAPI(lifespan=lifespan)
bearer = HTTPBearer()


def settings_of(project: str) -> dict[str, str]:
    settings = PROJECTS.get(project)
    if settings is None:
        raise HTTPException(status_code=404, detail="Unknown project")
    return settings


@app.post("/webhook/stripe/{project}")
async def stripe_webhook(
    project: str,
    request: Request,
    stripe_signature: Annotated[str | None, Header()] = None,
) -> dict[str, Any]:
    settings = settings_of(project)
    payload = await request.body()
    try:
        event = stripe.Webhook.construct_event(
            payload, stripe_signature, settings["webhook_secret"]
        )
    except ValueError as exc:
        raise HTTPException(status_code=400, detail="Invalid payload") from exc
    except stripe.SignatureVerificationError as exc:
        raise HTTPException(status_code=400, detail="Invalid signature") from exc

    # the pool's connection block is one transaction, committed at its end
    async with pool.connection() as conn:
        stored = await conn.execute(STORE_EVENT, (event.id, project, event.type, payload.decode()))
        if stored.rowcount == 1 and event.type == "checkout.session.completed":
            session = event.data.object
            await conn.execute(
                MARK_PAID,
                (session.client_reference_id, project, session.amount_total, session.currency),
            )
    return {"received": True}


@app.get("/status/{project}/{tx}")
async def order_status(
    project: str,
    tx: str,
    credentials: Annotated[HTTPAuthorizationCredentials, Depends(bearer)],
) -> dict[str, Any]:
    settings = settings_of(project)
    if not hmac.compare_digest(credentials.credentials.encode(), settings["api_key"].encode()):
        raise HTTPException(status_code=401, detail="Invalid API key")
    async with pool.connection() as conn:
        cursor = await conn.execute(READ_ORDER, (tx, project))
        row = await cursor.fetchone()
    if row is None:
        raise HTTPException(status_code=404, detail="Order not found")
    order_id, status, amount_total, currency = row
    return {"id": order_id, "status": status, "amount": amount_total, "currency": currency}
