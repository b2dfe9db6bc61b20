"""A project's notification endpoints (CONTRACT 4.8), kept in the project record: address,
mode, event types, secrets sealed at rest (the secret is shown once, when made or rotated; a
rotated one signs beside the new for 24 hours), and health (failing since, disabled why).

The notifier reads what an attempt needs from the store (edge.actors.notify_targets) and
reports here only what changes an endpoint's health (``outcome``): an endpoint that answers
``410`` or fails for five days is disabled here, in one commit.
"""

from __future__ import annotations

from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.records import iso_or_none
from edge.domain import ids, standard_webhooks
from edge.domain.egress import endpoint_problem
from edge.domain.notifications import health_after, wants
from edge.errors import Conflict, InvalidRequest, NotFound
from edge.store import keys, notifyq
from edge.store.codec import unpack

MAX_ENDPOINTS = 20
ROTATION_OVERLAP_MS = 24 * 3600 * 1000
REPLAY_MAX = 1000


def place(project_id: str, endpoint_id: str, field: str) -> str:
    return f"{project_id}/endpoints/{endpoint_id}/{field}"


def endpoint_view(endpoint: dict[str, Any]) -> dict[str, Any]:
    return {
        "endpointId": endpoint["id"],
        "url": endpoint["url"],
        "description": endpoint.get("description", ""),
        "mode": endpoint["mode"],
        "types": list(endpoint.get("types") or []),
        "enabled": endpoint["enabled"],
        "disabledReason": endpoint.get("disabledReason"),
        "failingSince": iso_or_none(endpoint.get("failingSince")),
        "secretRotatedUntil": iso_or_none(endpoint.get("previousUntil")),
        "createdAt": iso_or_none(endpoint["createdAt"]),
        "updatedAt": iso_or_none(endpoint["updatedAt"]),
    }


class Endpoints:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    @property
    def _all(self) -> dict[str, dict[str, Any]]:
        return self.ledger.project.setdefault("endpoints", {})

    def _get(self, endpoint_id: str) -> dict[str, Any]:
        endpoint = self._all.get(endpoint_id)
        if endpoint is None:
            raise NotFound("not_found", "No endpoint with this id in this project.")
        return endpoint

    def _check(self, url: str) -> None:
        problem = endpoint_problem(url, self.ledger.ctx.settings.notify_allow)
        if problem:
            raise InvalidRequest(
                "url_not_allowed",
                f"This address {problem}; endpoints are https, or http://localhost.",
                field="url",
            )

    def _seal(self, endpoint_id: str, field: str, secret: str) -> bytes:
        return self.ledger.ctx.sealer.seal(
            secret, place(self.ledger.project_id, endpoint_id, field)
        )

    async def create(self, msg: m.CreateEndpoint, reply: Reply) -> None:
        ledger = self.ledger
        if len(self._all) >= MAX_ENDPOINTS:
            raise Conflict("too_many_endpoints", "A project holds at most 20 endpoints.")
        self._check(msg.url)
        endpoint_id, secret, now = (
            ids.new_endpoint_id(),
            standard_webhooks.new_secret(),
            ledger.now_ms(),
        )
        endpoint = {
            "id": endpoint_id,
            "url": msg.url,
            "description": msg.description,
            "mode": msg.mode,
            "types": list(msg.types),
            "enabled": True,
            "secret": self._seal(endpoint_id, "secret", secret),
            "previousSecret": None,
            "previousUntil": None,
            "disabledReason": None,
            "failingSince": None,
            "createdAt": now,
            "updatedAt": now,
        }
        self._all[endpoint_id] = endpoint
        answer = {**endpoint_view(endpoint), "secret": secret}
        ledger.commit(ledger.config_changed(), reply, answer)

    async def list(self, msg: m.ListEndpoints, reply: Reply) -> None:
        views = [endpoint_view(e) for e in self._all.values()]
        self.ledger.reply_read(reply, {"items": views})

    async def patch(self, msg: m.PatchEndpoint, reply: Reply) -> None:
        ledger = self.ledger
        endpoint = self._get(msg.endpoint_id)
        changes = msg.changes
        if "url" in changes:
            self._check(changes["url"])
            endpoint["url"] = changes["url"]
        for name in ("types", "description"):
            if name in changes:
                endpoint[name] = changes[name]
        if "enabled" in changes:
            endpoint["enabled"] = changes["enabled"]
            if changes["enabled"]:  # turned on again: its health starts afresh
                endpoint.update(disabledReason=None, failingSince=None)
        now = ledger.now_ms()
        answer: dict[str, Any] = {}
        if changes.get("rotateSecret"):
            secret = standard_webhooks.new_secret()
            endpoint.update(
                previousSecret=self._reseal(endpoint),
                previousUntil=now + ROTATION_OVERLAP_MS,
                secret=self._seal(endpoint["id"], "secret", secret),
            )
            answer["secret"] = secret
        endpoint["updatedAt"] = now
        ledger.commit(ledger.config_changed(), reply, {**endpoint_view(endpoint), **answer})

    def _reseal(self, endpoint: dict[str, Any]) -> bytes:
        """The current secret, sealed again for its place as the previous one."""
        current = self._open(endpoint, "secret")
        return self._seal(endpoint["id"], "previousSecret", current)

    def _open(self, endpoint: dict[str, Any], field: str) -> str:
        sealed = endpoint[field]
        return self.ledger.ctx.sealer.open(
            sealed, place(self.ledger.project_id, endpoint["id"], field)
        )

    async def delete(self, msg: m.DeleteEndpoint, reply: Reply) -> None:
        ledger = self.ledger
        self._get(msg.endpoint_id)
        del self._all[msg.endpoint_id]
        ledger.commit(
            ledger.config_changed(), reply, {"deleted": True, "endpointId": msg.endpoint_id}
        )

    async def replay(self, msg: m.ReplayEvents, reply: Reply) -> None:
        """Owe the endpoint these events again (those of its mode), at most 1,000 a call."""
        ledger = self.ledger
        endpoint = self._get(msg.endpoint_id)
        store, pid = ledger.ctx.store, ledger.project_id
        if msg.event_ids:
            found = [await ledger.stored_event(evt_id) for evt_id in msg.event_ids]
            events = [e for e in found if e is not None]
            more = False
        else:
            after = keys.record(pid, keys.EVENT, msg.since) if msg.since else None
            rows = await store.scan(keys.prefix(pid, keys.EVENT), after=after, limit=REPLAY_MAX + 1)
            events = [unpack(raw) for _, raw in rows[:REPLAY_MAX]]
            more = len(rows) > REPLAY_MAX
        # its mode's; and, for a range, the types it takes (named events are sent as asked)
        types = () if msg.event_ids else endpoint.get("types") or ()
        mine = [e for e in events if wants(types, bool(e["isTest"]), endpoint["mode"], e["type"])]
        ops = []
        for event in mine:
            ops += notifyq.enqueue_ops(
                pid, endpoint["id"], event, endpoint["mode"], ledger.now_ms()
            )
        last = events[-1]["id"] if events else msg.since
        ledger.commit(ops, reply, {"queued": len(mine), "last": last, "hasMore": more})

    async def outcome(self, msg: m.EndpointOutcome, reply: Reply) -> None:
        """Keep the endpoint's health; a commit only when it changes."""
        ledger = self.ledger
        endpoint = self._all.get(msg.endpoint_id)
        now = ledger.now_ms()
        health = (
            health_after(msg.ok, msg.status, endpoint.get("failingSince"), now)
            if endpoint is not None and endpoint["enabled"]
            else None
        )
        if endpoint is None or health is None:
            reply(None)
            return
        failing_since, reason = health
        endpoint.update(failingSince=failing_since, updatedAt=now)
        if reason is not None:
            endpoint.update(enabled=False, disabledReason=reason)
        ledger.commit(ledger.config_changed(), reply, None)
