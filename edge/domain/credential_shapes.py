"""What a provider's credential looks like, where the provider documents it, and which field
each belongs in (CONTRACT 4.6). A merchant pasting keys into a form is the likeliest way a
secret gets published: a Stripe secret key in the publishable-key field would be served to
every buyer by public-info. So a value is checked against its field before it is stored:

- a field that takes documented kinds of value takes only those (``strict``: nothing else), in
  the credentials' own mode where the value says its mode (``sk_test_`` is no live key);
- a value recognised as another kind is refused with what it looks like and where it belongs;
- a field that is not secret (stored and shown in the clear) takes no value recognised as a
  secret of any kind, and a secret field no value recognised as a publishable one.

The kinds are the providers' own documented prefixes (Stripe's ``sk_``, ``rk_``, ``pk_`` and
``whsec_``; Paddle's ``pdl_live_apikey_`` / ``pdl_sdbx_apikey_`` API keys, ``test_`` / ``live_``
client-side tokens and ``pdl_ntfset_`` notification secrets), this node's own project keys,
and PEM private keys. PayPal and BTCPay document no shape for their ids and keys: for them only
the last rule holds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Kind:
    """A kind of credential: ``pattern`` may name a ``mode`` group, read through ``modes``."""

    label: str
    pattern: re.Pattern[str]
    secret: bool
    modes: Mapping[str, str] = field(default_factory=dict)

    def mode_of(self, value: str) -> str | None:
        found = self.pattern.match(value)
        token = found.groupdict().get("mode") if found else None
        return self.modes.get(token) if token else None


_SAME = {"test": "test", "live": "live"}

KINDS: Mapping[str, Kind] = {
    "stripe_secret_key": Kind(
        "a Stripe secret key (sk_)", re.compile(r"sk_(?P<mode>test|live)_\S"), True, _SAME
    ),
    "stripe_restricted_key": Kind(
        "a Stripe restricted key (rk_)", re.compile(r"rk_(?P<mode>test|live)_\S"), True, _SAME
    ),
    "stripe_publishable_key": Kind(
        "a Stripe publishable key (pk_)", re.compile(r"pk_(?P<mode>test|live)_\S"), False, _SAME
    ),
    "webhook_signing_secret": Kind(
        "a webhook signing secret (whsec_)", re.compile(r"whsec_\S"), True
    ),
    "paddle_api_key": Kind(
        "a Paddle API key (pdl_..._apikey_)",
        re.compile(r"pdl_(?P<mode>sdbx|live)_apikey_\S"),
        True,
        {"sdbx": "test", "live": "live"},
    ),
    "paddle_notification_secret": Kind(
        "a Paddle notification secret key (pdl_ntfset_)", re.compile(r"pdl_ntfset_\S"), True
    ),
    "paddle_client_token": Kind(
        "a Paddle client-side token (test_ or live_)",
        re.compile(r"(?P<mode>test|live)_[0-9A-Za-z]+$"),
        False,
        _SAME,
    ),
    "edge_project_key": Kind(
        "a project key of this node (cmk_)", re.compile(r"cmk_(live|test)_[0-9A-Za-z]"), True
    ),
    "private_key": Kind(
        "a private key", re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----"), True
    ),
}


@dataclass(frozen=True)
class FieldShape:
    """What one credential field takes: ``kinds`` (names in ``KINDS``), only those when
    ``strict``."""

    name: str
    secret: bool
    kinds: tuple[str, ...] = ()
    strict: bool = False


def kind_of(value: str) -> str | None:
    """The name of the kind ``value`` looks like, or None."""
    text = value.strip()
    return next((name for name, kind in KINDS.items() if kind.pattern.match(text)), None)


# what documentation writes in place of a value (``sk_test_...``, ``<your key>``): never a
# provider's real credential, and published as one it would fail every checkout
PLACEHOLDER = re.compile(r"\.\.\.|\u2026|^\s*<[^>]*>\s*$")


def problem(value: str, shape: FieldShape, mode: str, fields: tuple[FieldShape, ...]) -> str | None:
    """Why ``value`` does not belong in ``shape``'s field of the ``mode`` credentials (one of
    ``fields``, the provider's), or None."""
    if PLACEHOLDER.search(value):
        return (
            "this is a placeholder from documentation, not a value: copy the real one from the"
            " provider's dashboard"
        )
    found = kind_of(value)
    if found is not None:
        kind = KINDS[found]
        if found not in shape.kinds and (shape.kinds or kind.secret != shape.secret):
            return _belongs_elsewhere(kind, found, shape, fields)
        said = kind.mode_of(value.strip())
        if said is not None and said != mode:
            return f"this is a {said} key, in the {mode} credentials: use the {mode} one"
        return None
    if shape.strict:
        wanted = " or ".join(KINDS[k].label for k in shape.kinds)
        return f"must be {wanted}, as the provider's dashboard shows it"
    return None


def _belongs_elsewhere(
    kind: Kind, name: str, shape: FieldShape, fields: tuple[FieldShape, ...]
) -> str:
    home = next((f.name for f in fields if name in f.kinds), None)
    where = f"it belongs in {home}" if home else "it is not a credential of this field"
    if kind.secret and not shape.secret:
        return (
            f"this looks like {kind.label}, a secret: {where}. {shape.name} is not secret and "
            "may be shown or published, so a secret is never stored here"
        )
    return f"this looks like {kind.label}: {where}"


def _ecma(kind: Kind, mode: str | None) -> str:
    """``kind``'s pattern as JSON Schema writes one (ECMA 262, no named groups), allowing the
    white space the node strips around a value, in ``mode`` where it says one."""
    source = kind.pattern.pattern
    if mode is not None and kind.modes:
        token = next(t for t, m in kind.modes.items() if m == mode)
        source = re.sub(r"\(\?P<mode>[^)]*\)", token, source)
    source = re.sub(r"\(\?P<\w+>", "(", source)
    if source.endswith("$"):
        source = source[:-1] + "\\s*$"
    return "^\\s*" + source


def schema_of(shape: FieldShape, mode: str) -> dict[str, object]:
    """What ``problem`` lets through in ``shape``'s field of the ``mode`` credentials, as JSON
    Schema (for the API reference): never a kind it refuses, nor a key of the other mode, and
    only its own kinds where it is strict."""
    other = "live" if mode == "test" else "test"
    refused = []
    for name, kind in KINDS.items():
        if name not in shape.kinds and (shape.kinds or kind.secret != shape.secret):
            refused.append(_ecma(kind, None))
        elif kind.modes:
            refused.append(_ecma(kind, other))
    refused.append(PLACEHOLDER.pattern)
    schema: dict[str, object] = {
        "not": {"anyOf": [{"type": "string", "pattern": p} for p in refused]}
    }
    if shape.strict:
        schema["anyOf"] = [{"pattern": _ecma(KINDS[name], mode)} for name in shape.kinds]
    return schema
