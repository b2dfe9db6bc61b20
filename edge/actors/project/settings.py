"""The project's configuration (CONTRACT 4.6): the project itself, its products, its providers'
settings and credentials (secrets sealed at rest), and its API keys.

Every change rewrites the project record in one commit and answers after it; what was derived
from the old configuration (opened credentials, public info) is dropped at once.
"""

from __future__ import annotations

from typing import Any

from edge.actors import messages as m
from edge.actors.project.ledger import Ledger, Reply
from edge.actors.views import product_view, project_view, provider_view
from edge.domain import ids
from edge.domain.modes import MODES
from edge.domain.urls import first_disallowed_redirect, redirect_rule, with_own_origins
from edge.errors import Conflict, InvalidRequest, NotFound, invalid
from edge.providers import credentials as creds
from edge.providers import prices
from edge.providers.base import Provider
from edge.providers.registry import PROVIDERS
from edge.store.codec import pack

MAX_KEYS = 50


class ProjectSettings:
    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    async def get_project(self, msg: m.GetProject, reply: Reply) -> None:
        self.ledger.reply_read(reply, project_view(self.ledger.project))

    async def patch_project(self, msg: m.PatchProject, reply: Reply) -> None:
        ledger = self.ledger
        changed = {**ledger.project, **msg.changes}
        changed["allowedOrigins"] = with_own_origins(changed)
        refused = first_disallowed_redirect(changed)
        if refused is not None:
            raise InvalidRequest("url_not_allowed", redirect_rule(refused), field=refused)
        ledger.project.update(msg.changes, allowedOrigins=changed["allowedOrigins"])
        ledger.commit(ledger.config_changed(), reply, project_view(ledger.project))

    async def put_product(self, msg: m.PutProduct, reply: Reply) -> None:
        ledger = self.ledger
        product = msg.product
        overrides = product.get("overrides", {})
        for name in overrides:
            if name not in PROVIDERS:
                raise invalid(f"unknown provider {name!r}", f"overrides.{name}")
        enabled = [n for n, c in ledger.project["providers"].items() if c.get("enabled")]
        for name in dict.fromkeys([*enabled, *overrides]):
            provider = PROVIDERS.get(name)
            found = prices.problem(provider, product) if provider is not None else None
            if found is not None:
                at = found.field
                if found.field == "amount" and "amount" in overrides.get(name, {}):
                    at = f"overrides.{name}.amount"
                # a rule of a provider the project has enabled (or the product names): refused
                # when saved, never found at checkout (CONTRACT 4.3: a 400 naming the rule)
                raise InvalidRequest("provider_limit", f"{found.rule}.", field=at)
        ledger.project["products"][product["id"]] = product
        ledger.commit(ledger.config_changed(), reply, product_view(product))

    async def delete_product(self, msg: m.DeleteProduct, reply: Reply) -> None:
        ledger = self.ledger
        ledger.product(msg.product_id)
        del ledger.project["products"][msg.product_id]
        ledger.commit(ledger.config_changed(), reply, {"deleted": True, "id": msg.product_id})

    async def put_provider(self, msg: m.PutProvider, reply: Reply) -> None:
        ledger = self.ledger
        provider, updated = self._updated(msg.provider, msg.body)
        checks = dict(updated.get("checks") or {})
        for mode in MODES:
            if mode in msg.checks:
                checks[mode] = msg.checks[mode]
            elif mode in msg.body:
                checks.pop(mode, None)  # changed and not tried: nothing known of it
        updated["checks"] = checks
        ledger.project["providers"][provider.name] = updated
        view = provider_view(provider.name, updated, ledger.project["products"].values())
        ledger.commit(ledger.config_changed(), reply, view)

    async def try_provider(self, msg: m.TryProvider, reply: Reply) -> None:
        ledger = self.ledger
        provider, updated = self._updated(msg.provider, msg.body)
        stored = ledger.project["providers"].get(provider.name) or {}
        turned_on = updated["enabled"] and not stored.get("enabled")
        opened = {
            mode: creds.open_mode(
                provider, ledger.project_id, mode, updated[mode], ledger.ctx.sealer
            )
            for mode in MODES
            if mode in msg.body or (turned_on and updated[mode])
        }
        reply(opened)

    def _updated(self, name: str, body: dict[str, Any]) -> tuple[Provider, dict[str, Any]]:
        """The provider's configuration after ``body`` (checked by
        ``edge.http.bodies.provider_settings``), secrets sealed; not stored."""
        ledger = self.ledger
        provider = PROVIDERS.get(name)
        if provider is None:
            raise NotFound("unknown_provider", f"This node has no provider {name!r}.")
        stored = dict(ledger.project["providers"].get(provider.name) or {})
        # label and order merge like credentials: given replaces (None: the default), omitted
        # keeps the merchant's
        updated: dict[str, Any] = {
            "enabled": body["enabled"],
            "label": body.get("label", stored.get("label")),
            "order": body.get("order", stored.get("order")),
            "checks": stored.get("checks") or {},
        }
        for mode in MODES:
            previous = stored.get(mode) or {}
            updated[mode] = (
                creds.merge_mode(
                    provider,
                    ledger.project_id,
                    mode,
                    body[mode],
                    previous,
                    ledger.ctx.sealer,
                    ledger.ctx.settings.provider_hosts_allow,
                )
                if mode in body
                else previous
            )
        return provider, updated

    async def create_key(self, msg: m.CreateKey, reply: Reply) -> None:
        ledger = self.ledger
        if len(ledger.project["keys"]) >= MAX_KEYS:
            raise Conflict("too_many_keys", "A project holds at most 50 keys; revoke one first.")
        key = ids.new_api_key(msg.mode)
        key_id = ids.new_key_id()
        digest = ids.hash_api_key(key)
        meta = {
            "keyId": key_id,
            "mode": msg.mode,
            "name": msg.name,
            "last4": key[-4:],
            "hash": digest,
            "createdAt": ledger.now_ms(),
        }
        ledger.project["keys"][key_id] = meta
        ops = ledger.config_changed()
        index = {"projectId": ledger.project_id, "keyId": key_id, "mode": msg.mode}
        ops.append(("apikeys", digest, pack(index)))
        answer = {
            "keyId": key_id,
            "key": key,
            "last4": key[-4:],
            "mode": msg.mode,
            "name": msg.name,
        }
        ledger.commit(ops, reply, answer)

    async def revoke_key(self, msg: m.RevokeKey, reply: Reply) -> None:
        ledger = self.ledger
        meta = ledger.project["keys"].pop(msg.key_id, None)
        if meta is None:
            raise NotFound("not_found", "No key with this id in this project.")
        ops = ledger.config_changed()
        ops.append(("apikeys", meta["hash"], None))
        forget = ledger.ctx.keys.forget
        forget(meta["hash"])
        ticket = ledger.commit(ops, reply, {"revoked": True, "keyId": msg.key_id})
        # A lookup during the fsync still finds the key in the store and caches it again: forget
        # it once more at the commit, before anything else runs.
        ticket.when_durable(lambda _error: forget(meta["hash"]))
