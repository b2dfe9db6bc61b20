"""What one notification attempt needs (the endpoint's address and secrets in use, the event's
body), read from the store rather than asked of the project's actor: the actor is the one busy
ingesting the webhooks whose events these are. Both the endpoint (in the project record) and
the event are committed before their queue entry is, so the store has them.

Opened secrets are kept per endpoint and version of its record (a rotation or an edit makes a
new one), so a sealed secret is opened once, not once per attempt."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from edge.actors.project.endpoints import place
from edge.actors.records import event_view
from edge.domain.notifications import still_wanted
from edge.sealing import Sealer
from edge.store import keys, notifyq
from edge.store.engine import Engine

KEPT = 1024


class StoredTargets:
    def __init__(self, store: Engine, sealer: Sealer) -> None:
        self._store = store
        self._sealer = sealer
        self._opened: OrderedDict[tuple[str, str, int], tuple[str, str | None]] = OrderedDict()

    async def __call__(
        self,
        project_id: str,
        endpoint_id: str,
        event_id: str,
        now_ms: int,
        queued_type: str | None = None,
    ) -> dict[str, Any] | None:
        """What an attempt needs; None when the endpoint or the event is gone. ``wanted``:
        whether the event, queued as ``queued_type``, is still one the endpoint takes
        (``edge.domain.notifications.still_wanted``)."""
        project = await self._store.get(keys.project(project_id))
        endpoint = notifyq.enabled_endpoint(project, endpoint_id)
        if endpoint is None:
            return None
        event = await self._store.get(keys.record(project_id, keys.EVENT, event_id))
        if event is None:
            return None
        return {
            "url": endpoint["url"],
            "secrets": self._in_use(project_id, endpoint, now_ms),
            "body": json.dumps(event_view(event), separators=(",", ":")).encode(),
            "failingSince": endpoint.get("failingSince"),
            "wanted": still_wanted(queued_type, endpoint, event),
        }

    async def endpoint(
        self, project_id: str, endpoint_id: str, now_ms: int
    ) -> dict[str, Any] | None:
        """An endpoint's address, mode and secrets in use, on or off (a test send)."""
        project = await self._store.get(keys.project(project_id))
        endpoint = ((project or {}).get("endpoints") or {}).get(endpoint_id)
        if endpoint is None:
            return None
        secrets = self._in_use(project_id, endpoint, now_ms)
        return {"url": endpoint["url"], "mode": endpoint["mode"], "secrets": secrets}

    def _in_use(self, project_id: str, endpoint: Mapping[str, Any], now_ms: int) -> list[str]:
        """The secrets a delivery is signed with now: the current one, and a rolled one for
        its 24 hours."""
        current, previous = self._secrets(project_id, endpoint)
        if previous is not None and (endpoint.get("previousUntil") or 0) > now_ms:
            return [current, previous]
        return [current]

    def _secrets(self, project_id: str, endpoint: Mapping[str, Any]) -> tuple[str, str | None]:
        key = (project_id, endpoint["id"], endpoint["updatedAt"])
        opened = self._opened.get(key)
        if opened is None:
            current = self._sealer.open(
                endpoint["secret"], place(project_id, endpoint["id"], "secret")
            )
            previous = (
                self._sealer.open(
                    endpoint["previousSecret"], place(project_id, endpoint["id"], "previousSecret")
                )
                if endpoint.get("previousSecret")
                else None
            )
            opened = self._opened[key] = (current, previous)
            while len(self._opened) > KEPT:
                self._opened.popitem(last=False)
        return opened
