"""Node settings: one frozen dataclass built from the command line, the environment and an
optional TOML file (``EDGE_CONFIG``). Secrets that must survive restarts (the admin token and the
at-rest encryption key) are made on first start and kept in the data dir with mode 0600.

A setting, the file or the data dir that cannot be used raises ``ConfigError``, whose message is
the one line ``edge serve`` prints: what is wrong, and what to do about it."""

from __future__ import annotations

import os
import secrets
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edge.domain import smtp
from edge.domain.clientaddr import parse_networks
from edge.domain.egress import allow_list
from edge.domain.quota import DEFAULT_TIERS, Tier
from edge.domain.rate import Limit


class ConfigError(Exception):
    """The node cannot start with these settings; the message names the cause and the fix."""


ADMIN_TOKEN_FILE = "admin-token"
SECRET_KEY_FILE = "secret.key"
NODE_FILE = "node.json"
NODE_ID_FILE = "node-id"

# CONTRACT section 8. Keys name a bucket: endpoint, then who is counted (ip, key, ...).
DEFAULT_RATE_LIMITS: dict[str, Limit] = {
    "status:ip": Limit(60, 60.0),
    "status:key": Limit(600, 60.0),
    "checkout:ip": Limit(30, 60.0),
    "checkout:key": Limit(600, 60.0),
    "public:ip": Limit(300, 60.0),
    "webhook": Limit(6000, 60.0),
    "manage": Limit(300, 60.0),
    "login:ip": Limit(10, 60.0),
    "login:email": Limit(10, 60.0),
    "signup:ip": Limit(10, 3600.0),
    "reset:ip": Limit(5, 60.0),
    "reset:email": Limit(3, 3600.0),
}


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    host: str = "127.0.0.1"
    port: int = 8080
    admin_token: str = ""
    secret_key: bytes = b""
    # EDGE_SIGNING_KEY: the PEM of the key that signs public-info and the button script, the
    # same on every node of a cluster; None: the data dir's signing-key.pem (edge.signing)
    signing_key: str | None = field(default=None, repr=False)
    public_url: str | None = None
    signup_open: bool = True  # EDGE_SIGNUP=closed: only the operator creates accounts
    trusted_proxies: tuple[str, ...] = ()
    # addresses (or networks) that may read /metrics without the operator's token
    metrics_allow: tuple[str, ...] = ()
    actor_idle_s: float = 300.0
    mailbox_size: int = 256
    map_size: int = 64 * 2**30
    tiers: dict[str, Tier] = field(default_factory=lambda: dict(DEFAULT_TIERS))
    rate_limits: dict[str, Limit] = field(default_factory=lambda: dict(DEFAULT_RATE_LIMITS))
    # per tier, buckets whose limits differ from rate_limits (e.g. a "bench" tier)
    tier_rate_limits: dict[str, dict[str, Limit]] = field(default_factory=dict)
    # Connections (CONTRACT 8): client connections held at once; a request body's least
    # average rate (bytes/s) once its first ``body_grace_s`` seconds have passed.
    # hosts the node may call although they are not public https addresses (CONTRACT 4.6):
    # "host" or "host:port", lower case; the demo's and the tests' loopback simulators
    provider_hosts_allow: frozenset[str] = frozenset()
    # True: the node calls no provider host but those (an egress locked down to known hosts;
    # the tests, which must never reach a real provider)
    provider_hosts_only: bool = False
    # notification endpoints allowed although not public https (CONTRACT 4.8: a backend on the
    # node's own private network); http://localhost is always allowed
    notify_allow: frozenset[str] = frozenset()
    max_connections: int = 1000
    # password hashes (16 MiB each) run at once, and callers that may wait for a turn; past
    # both, 429 (docs/operations.md: the memory this bounds)
    hashing_workers: int = 2
    hashing_waiting: int = 16
    # EDGE_SMTP_URL (edge.domain.smtp): where password reset links are e-mailed; None: the
    # operator hands them out (edge account reset-link)
    smtp_url: str | None = field(default=None, repr=False)
    smtp_from: str | None = None
    header_timeout_s: float = 10.0  # from a request's first byte to the end of its headers
    # EDGE_LONG_STEP_MS (edge.loop_steps): log and count task steps that hold the event loop
    # longer than this, in CPU; None: not watched (it costs two clock reads a step)
    long_step_ms: float | None = None
    body_min_rate: float = 1024.0
    body_grace_s: float = 2.0
    # EDGE_STORE=postgresql://...: cluster mode, the store in PostgreSQL (docs/cluster.md);
    # unset, the embedded LMDB store in the data dir. It may hold a password: never shown.
    store_url: str | None = field(default=None, repr=False)
    node_id: str = ""  # EDGE_NODE_ID, else made once and kept in the data dir
    lease_s: float = 10.0  # EDGE_LEASE_S: a project's lease, unrenewed, lasts this long
    # Asking providers (CONTRACT 4.3a): a pending checkout with no webhook is looked at this
    # often (EDGE_SYNC_EVERY_S), so it reaches its true status within that long; at most this
    # many requests a second go to one provider account (EDGE_SYNC_RATE)
    sync_every_s: float = 300.0
    sync_rate: float = 5.0
    # a provider call's answer is waited for this long (EDGE_PROVIDER_TIMEOUT_S)
    provider_timeout_s: float = 15.0

    @classmethod
    def load(cls, data_dir: str | Path, **overrides: object) -> Settings:
        """Settings for a node on ``data_dir`` (created if missing)."""
        data = Path(data_dir).resolve()
        try:
            data.mkdir(parents=True, exist_ok=True, mode=0o700)
            data.chmod(0o700)  # keys and the store live here: the node's user only
            return cls._load(data, overrides)
        except OSError as exc:
            raise ConfigError(data_dir_problem(data, exc)) from None

    @classmethod
    def _load(cls, data: Path, overrides: dict[str, object]) -> Settings:
        values: dict[str, object] = {}
        config_path = os.environ.get("EDGE_CONFIG")
        if config_path:
            values.update(_from_toml(Path(config_path)))
        env = os.environ
        if env.get("EDGE_SIGNUP"):
            if env["EDGE_SIGNUP"] not in ("open", "closed"):
                raise ConfigError("EDGE_SIGNUP must be open or closed")
            values["signup_open"] = env["EDGE_SIGNUP"] == "open"
        if env.get("EDGE_PUBLIC_URL"):
            values["public_url"] = env["EDGE_PUBLIC_URL"].rstrip("/")
        if env.get("EDGE_TRUSTED_PROXIES"):
            values["trusted_proxies"] = tuple(
                p.strip() for p in env["EDGE_TRUSTED_PROXIES"].split(",") if p.strip()
            )
        try:
            parse_networks(values.get("trusted_proxies", ()))  # type: ignore[arg-type]
        except ValueError as exc:
            raise ConfigError(
                f"EDGE_TRUSTED_PROXIES (or trusted_proxies in EDGE_CONFIG): {exc}; fix the entry"
            ) from None
        if env.get("EDGE_ACTOR_IDLE_S"):
            values["actor_idle_s"] = _positive_seconds("EDGE_ACTOR_IDLE_S")
        if env.get("EDGE_PROVIDER_HOSTS_ONLY"):
            if env["EDGE_PROVIDER_HOSTS_ONLY"] not in ("0", "1"):
                raise ConfigError("EDGE_PROVIDER_HOSTS_ONLY must be 0 or 1")
            values["provider_hosts_only"] = env["EDGE_PROVIDER_HOSTS_ONLY"] == "1"
        if env.get("EDGE_PROVIDER_HOSTS_ALLOW"):
            values["provider_hosts_allow"] = allow_list(env["EDGE_PROVIDER_HOSTS_ALLOW"].split(","))
        if env.get("EDGE_METRICS_ALLOW"):
            values["metrics_allow"] = tuple(
                e.strip() for e in env["EDGE_METRICS_ALLOW"].split(",") if e.strip()
            )
            try:
                parse_networks(values["metrics_allow"])  # type: ignore[arg-type]
            except ValueError as exc:
                raise ConfigError(f"EDGE_METRICS_ALLOW: {exc}") from None
        if env.get("EDGE_NOTIFY_ALLOW"):
            values["notify_allow"] = allow_list(env["EDGE_NOTIFY_ALLOW"].split(","))
        if env.get("EDGE_SMTP_URL"):
            try:
                smtp.parse(env["EDGE_SMTP_URL"])
            except ValueError as exc:
                raise ConfigError(f"EDGE_SMTP_URL: {exc}; fix it or unset it") from None
            values["smtp_url"] = env["EDGE_SMTP_URL"]
        if env.get("EDGE_SMTP_FROM"):
            values["smtp_from"] = env["EDGE_SMTP_FROM"]
        if env.get("EDGE_STORE"):
            if not env["EDGE_STORE"].startswith(("postgresql://", "postgres://")):
                raise ConfigError(
                    "EDGE_STORE must be a postgresql:// URL (cluster mode); unset it for the"
                    " embedded store"
                )
            values["store_url"] = env["EDGE_STORE"]
        if env.get("EDGE_SIGNING_KEY", "").strip():
            values["signing_key"] = env["EDGE_SIGNING_KEY"].strip()
        if env.get("EDGE_LEASE_S"):
            values["lease_s"] = _positive_seconds("EDGE_LEASE_S")
        for name in ("sync_every_s", "sync_rate", "provider_timeout_s"):
            variable = f"EDGE_{name.upper()}"
            if env.get(variable):
                values[name] = _positive_seconds(variable)
        values["node_id"] = env.get("EDGE_NODE_ID") or _kept_secret(
            data / NODE_ID_FILE, lambda: f"node-{secrets.token_hex(4)}"
        )
        if env.get("EDGE_LONG_STEP_MS"):
            values["long_step_ms"] = _positive_seconds("EDGE_LONG_STEP_MS", "milliseconds")
        if env.get("EDGE_MAX_CONNECTIONS"):
            values["max_connections"] = _positive_int("EDGE_MAX_CONNECTIONS")
        values.update({k: v for k, v in overrides.items() if v is not None})
        values["admin_token"] = env.get("EDGE_ADMIN_TOKEN") or _kept_secret(
            data / ADMIN_TOKEN_FILE, lambda: secrets.token_urlsafe(32)
        )
        key_hex = env.get("EDGE_SECRET_KEY") or _kept_secret(
            data / SECRET_KEY_FILE, lambda: secrets.token_hex(32)
        )
        values["secret_key"] = _secret_key_bytes(key_hex)
        return cls(data_dir=data, **values)  # type: ignore[arg-type]


def data_dir_problem(data: Path, exc: OSError) -> str:
    """Why the node cannot use its data dir, and what to do, in one line."""
    where = f"{exc.filename}: " if exc.filename and Path(exc.filename) != data else ""
    return (
        f"cannot use the data dir {data}: {where}{exc.strerror or exc}; run the node as the "
        "user who owns it, or give --data a directory this user may create and write"
    )


def read_admin_token(data_dir: Path) -> str:
    return os.environ.get("EDGE_ADMIN_TOKEN") or (data_dir / ADMIN_TOKEN_FILE).read_text().strip()


def _kept_secret(path: Path, make: object) -> str:
    if path.exists():
        return path.read_text().strip()
    value = make()  # type: ignore[operator]
    # O_EXCL: two processes starting at once must not each write a different secret.
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return path.read_text().strip()
    with os.fdopen(fd, "w") as handle:
        handle.write(value + "\n")
    return str(value)


def _positive_int(name: str) -> int:
    try:
        value = int(os.environ[name])
    except ValueError:
        raise ConfigError(f"{name} must be a whole number") from None
    if value < 1:
        raise ConfigError(f"{name} must be at least 1")
    return value


def _positive_seconds(name: str, unit: str = "seconds") -> float:
    try:
        value = float(os.environ[name])
    except ValueError:
        raise ConfigError(f"{name} must be a number of {unit}") from None
    if not value > 0:
        raise ConfigError(f"{name} must be more than 0")
    return value


def _secret_key_bytes(text: str) -> bytes:
    try:
        key = bytes.fromhex(text.strip())
    except ValueError:
        raise ConfigError("EDGE_SECRET_KEY must be 64 hex characters (a 256-bit key)") from None
    if len(key) != 32:
        raise ConfigError("EDGE_SECRET_KEY must be 64 hex characters (a 256-bit key)")
    return key


# the file's settings: numbers (with the least each may be) and lists of strings
_WHOLE = {
    "mailbox_size": 1,
    "map_size": 1,
    "max_connections": 1,
    "hashing_workers": 1,
    "hashing_waiting": 0,
}
_SECONDS = (
    "actor_idle_s",
    "header_timeout_s",
    "body_min_rate",
    "body_grace_s",
    "sync_every_s",
    "sync_rate",
    "provider_timeout_s",
)
_LISTS = ("provider_hosts_allow", "notify_allow", "trusted_proxies", "metrics_allow")
_KNOWN = frozenset({"public_url", "rate_limits", "tiers", *_WHOLE, *_SECONDS, *_LISTS})


def _from_toml(path: Path) -> dict[str, object]:
    """The settings of the file at ``path``; ``ConfigError`` naming the file, the setting and
    what it must be, for a file that cannot be read or used."""
    try:
        raw = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(
            f"EDGE_CONFIG: cannot read {path}: {exc.strerror}; fix the path or unset EDGE_CONFIG"
        ) from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"EDGE_CONFIG {path} is not valid TOML: {exc}; fix the file") from None
    try:
        return _settings_of(raw)
    except ConfigError as exc:
        raise ConfigError(f"EDGE_CONFIG {path}: {exc}; fix the file") from None
    except KeyError as exc:
        raise ConfigError(f"EDGE_CONFIG {path}: a table lacks {exc}; fix the file") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ConfigError(
            f"EDGE_CONFIG {path}: a setting cannot be used: {exc}; fix the file"
        ) from None


def _settings_of(raw: dict[str, Any]) -> dict[str, object]:
    unknown = set(raw) - _KNOWN
    if unknown:
        raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
    values: dict[str, object] = {}
    for name, least in _WHOLE.items():
        if name in raw:
            value = raw[name]
            if not isinstance(value, int) or isinstance(value, bool) or value < least:
                raise ConfigError(
                    f"{name} must be a whole number of at least {least}, not {value!r}"
                )
            values[name] = value
    for name in _SECONDS:
        if name in raw:
            value = raw[name]
            if not isinstance(value, int | float) or isinstance(value, bool) or not value > 0:
                raise ConfigError(f"{name} must be a number above 0, not {value!r}")
            values[name] = float(value)
    for name in _LISTS:
        if name in raw and not (
            isinstance(raw[name], list) and all(isinstance(v, str) for v in raw[name])
        ):
            raise ConfigError(f"{name} must be a list of strings")
    if "public_url" in raw:
        if not isinstance(raw["public_url"], str):
            raise ConfigError("public_url must be a string")
        values["public_url"] = raw["public_url"].rstrip("/")
    if "provider_hosts_allow" in raw:
        values["provider_hosts_allow"] = allow_list(raw["provider_hosts_allow"])
    if "provider_hosts_only" in raw:
        if not isinstance(raw["provider_hosts_only"], bool):
            raise ConfigError("provider_hosts_only must be true or false")
        values["provider_hosts_only"] = raw["provider_hosts_only"]
    if "notify_allow" in raw:
        values["notify_allow"] = allow_list(raw["notify_allow"])
    if "trusted_proxies" in raw:
        values["trusted_proxies"] = tuple(raw["trusted_proxies"])
    if "metrics_allow" in raw:
        values["metrics_allow"] = tuple(raw["metrics_allow"])
    if "rate_limits" in raw:
        values["rate_limits"] = {**DEFAULT_RATE_LIMITS, **_limits(raw["rate_limits"])}
    if "tiers" in raw:
        tiers = dict(DEFAULT_TIERS)
        tier_limits: dict[str, dict[str, Limit]] = {}
        for name, spec in raw["tiers"].items():
            tiers[name] = Tier(
                name=name,
                live_events=int(spec["live_events"]),
                test_events=int(spec["test_events"]),
            )
            if "rate_limits" in spec:
                tier_limits[name] = _limits(spec["rate_limits"])
        values["tiers"] = tiers
        values["tier_rate_limits"] = tier_limits
    return values


def _limits(table: dict[str, dict[str, float]]) -> dict[str, Limit]:
    unknown = set(table) - set(DEFAULT_RATE_LIMITS)
    if unknown:
        raise ConfigError(f"unknown rate limit bucket(s): {', '.join(sorted(unknown))}")
    return {
        name: Limit(int(spec["count"]), float(spec["period_s"])) for name, spec in table.items()
    }
