"""Checking and storing a provider's per-mode credentials (CONTRACT 4.6).

Stored form per mode: public fields as plain values, secret fields as
``{"sealed": bytes, "last4": str}``. Reads show secrets only as ``{"set": true, "last4": ...}``.
A PUT merges: a given field replaces, ``null`` removes, an omitted field is kept, so rotating
one secret does not mean sending all of them again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from edge.domain import credential_shapes
from edge.domain.egress import address_problem, host_problem, operator_allows_host
from edge.domain.errors import InvalidInput
from edge.errors import InvalidRequest
from edge.providers.base import CredentialField, Provider
from edge.sealing import Sealer

_HOST = re.compile(r"^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$")
_COUNTRY = re.compile(r"^[A-Z]{2}$")


def place(project_id: str, provider: str, mode: str, field: str) -> str:
    return f"{project_id}/{provider}/{mode}/{field}"


def merge_mode(
    provider: Provider,
    project_id: str,
    mode: str,
    given: object,
    stored: Mapping[str, Any],
    sealer: Sealer,
    allowed_hosts: frozenset[str] = frozenset(),
) -> dict[str, Any]:
    """The new stored credentials of one mode after applying ``given`` (a JSON object).
    Addresses the node will call must pass ``edge.domain.egress`` (``allowed_hosts``: the
    operator's allow list)."""
    if not isinstance(given, dict):
        raise InvalidInput(f"{mode} must be an object of credential fields", field=mode)
    fields = {f.name: f for f in provider.credential_fields}
    merged = dict(stored)
    for name, value in given.items():
        spec = fields.get(name)
        path = f"{mode}.{name}"
        if spec is None:
            known = ", ".join(fields) or "none"
            raise InvalidInput(f"{provider.name} has no credential {name!r} (known: {known})", path)
        if value is None:
            merged.pop(name, None)
            continue
        clean = _check(spec, value, path, allowed_hosts)
        if spec.shape == "string":
            _check_shape(provider, spec, clean, mode, path)
            if spec.pattern and not re.fullmatch(spec.pattern, clean):
                raise InvalidInput(f"{path}: {spec.rule}", path, "invalid_credential")
        if spec.secret:
            merged[name] = {
                "sealed": sealer.seal(clean, place(project_id, provider.name, mode, name)),
                "last4": clean[-4:],
            }
        else:
            merged[name] = clean
    return merged


def open_mode(
    provider: Provider, project_id: str, mode: str, stored: Mapping[str, Any], sealer: Sealer
) -> dict[str, Any]:
    """Plain credentials of one mode, for the actor's memory only."""
    plain: dict[str, Any] = {}
    for name, value in stored.items():
        if isinstance(value, dict) and "sealed" in value:
            plain[name] = sealer.open(value["sealed"], place(project_id, provider.name, mode, name))
        else:
            plain[name] = value
    return plain


def redact_mode(stored: Mapping[str, Any]) -> dict[str, Any]:
    return {
        name: {"set": True, "last4": value["last4"]}
        if isinstance(value, dict) and "sealed" in value
        else value
        for name, value in stored.items()
    }


def _check(spec: CredentialField, value: object, path: str, allowed: frozenset[str]) -> Any:
    if spec.shape == "address":
        return check_address(value, path)
    if spec.shape == "hosts":
        if not isinstance(value, list) or not value or len(value) > 10:
            raise InvalidInput("must be a list of 1 to 10 host names", path)
        hosts = [h.lower() for h in value if isinstance(h, str)]
        if len(hosts) != len(value) or not all(_HOST.match(h) for h in hosts):
            raise InvalidInput("every entry must be a host name", path)
        for host in hosts:
            problem = None if operator_allows_host(allowed, host) else host_problem(host)
            if problem:
                raise InvalidRequest(
                    "url_not_allowed",
                    f"The host {host} {problem}; the node does not call it.",
                    field=path,
                )
        return hosts
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput("must be a non-empty string", path)
    if len(value) > 1000:
        raise InvalidInput("must be at most 1000 characters", path)
    if spec.shape == "url":
        problem = address_problem(value, allowed)
        if problem:
            raise InvalidRequest(
                "url_not_allowed",
                f"This address {problem}; the node calls only public https addresses.",
                field=path,
            )
        return value.rstrip("/")
    return value.strip()


def _check_shape(
    provider: Provider, spec: CredentialField, value: str, mode: str, path: str
) -> None:
    """``400`` naming the field when ``value`` is not what the field takes (a secret in a
    public field above all): ``edge.domain.credential_shapes``."""
    fields = tuple(_shape(f) for f in provider.credential_fields)
    wrong = credential_shapes.problem(value, _shape(spec), mode, fields)
    if wrong is not None:
        raise InvalidInput(f"{path}: {wrong}", path, "invalid_credential")


def _shape(spec: CredentialField) -> credential_shapes.FieldShape:
    return credential_shapes.FieldShape(spec.name, spec.secret, spec.kinds, spec.strict)


def check_address(value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict) or set(value) - {"name", "lines", "country"}:
        raise InvalidInput("must be an object {name, lines[], country}", path)
    name, lines, country = value.get("name"), value.get("lines"), value.get("country")
    if not isinstance(name, str) or not 1 <= len(name.strip()) <= 200:
        raise InvalidInput("name must be 1 to 200 characters", f"{path}.name")
    if (
        not isinstance(lines, list)
        or not 1 <= len(lines) <= 6
        or not all(isinstance(line, str) and 1 <= len(line.strip()) <= 200 for line in lines)
    ):
        raise InvalidInput("lines must be 1 to 6 non-empty strings", f"{path}.lines")
    if not isinstance(country, str) or not _COUNTRY.match(country):
        raise InvalidInput("country must be an ISO 3166 alpha-2 code like GB", f"{path}.country")
    return {"name": name.strip(), "lines": [line.strip() for line in lines], "country": country}
