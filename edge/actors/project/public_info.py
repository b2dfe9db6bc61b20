"""The public info of a project (CONTRACT 4.7): which providers a buyer may choose, with their
labels, icons and publishable keys, for one mode and optionally one product.

Rendered once per configuration and kept as bytes with their ETag: the answer is read by every
page that shows a button, and changes only when the merchant changes the configuration.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from edge.actors import messages as m
from edge.actors.project.health import ProviderHealth
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.views import product_view
from edge.domain.labels import Label, distinct
from edge.domain.money import to_wire
from edge.providers.offers import KINDS_FIRST, display_name, product_problem
from edge.providers.registry import PROVIDERS


class PublicInfo:
    """A rendered answer and its ETag."""

    __slots__ = ("body", "etag")

    def __init__(self, body: bytes) -> None:
        self.body = body
        self.etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


class PublicInfoPages:
    def __init__(self, ledger: Ledger, health: ProviderHealth) -> None:
        self.ledger = ledger
        self.health = health
        self._rendered: dict[tuple[str | None, str], PublicInfo] = {}
        self._version = (ledger.config_version, health.version)

    async def get(self, msg: m.GetPublicInfo, reply: Reply) -> None:
        self.health.probe_due()  # buyers look at the button: is a failing method back?
        version = (self.ledger.config_version, self.health.version)
        if self._version != version:  # the configuration changed, or a provider's health
            self._rendered.clear()
            self._version = version
        key = (msg.product_id, msg.mode)
        info = self._rendered.get(key)
        if info is None:
            info = PublicInfo(self._render(msg.product_id, msg.mode))
            self._rendered[key] = info
        self.ledger.reply_read(reply, info)

    def _render(self, product_id: str | None, mode: str) -> bytes:
        ledger = self.ledger
        product = ledger.product(product_id) if product_id is not None else None
        entries = []
        labels: dict[str, Label] = {}
        for name, config in ledger.project["providers"].items():
            provider = PROVIDERS.get(name)
            if provider is None or not config.get("enabled"):
                continue
            credentials = ledger.credentials(provider, mode)
            if not provider.is_configured(credentials):
                continue
            if product is not None and product_problem(provider, product) is not None:
                continue  # a subscription it cannot sell, a price it cannot charge
            override = (product or {}).get("overrides", {}).get(name, {})
            chosen = override.get("label") or config.get("label")
            labels[name] = Label(
                chosen or provider.default_label, chosen is None, display_name(provider)
            )
            entry: dict[str, Any] = {
                "provider": name,
                "kind": provider.kind,
                "label": labels[name].text,
                "icon": f"{ledger.ctx.public_url}/static/icons/{provider.icon}",
                "publishableKey": provider.publishable_key(credentials),
                "mailingAddress": provider.mailing_address(credentials),
            }
            if product is not None:
                entry["amount"] = to_wire(
                    override.get("amount", product["amount"]), product["currency"]
                )
                entry["currency"] = product["currency"]
            entry["order"] = override.get("order") or config.get("order") or 100
            # failing on its side now: listed, so the merchant's page can say why it is missing
            entry["available"] = not self.health.failing(name, mode)
            entries.append(entry)
        # the merchant's order first; among equals, cards before other ways to pay (the
        # buyers most shops have), then the provider's name
        entries.sort(key=lambda e: (e["order"], KINDS_FIRST.index(e["kind"]), e["provider"]))
        shown = distinct([labels[e["provider"]] for e in entries])
        for entry, text in zip(entries, shown, strict=True):
            entry["label"] = text
        body = {
            "projectId": ledger.project_id,
            "mode": mode,
            "product": product_view(product, public=True) if product else None,
            "providers": entries,
        }
        return json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()
