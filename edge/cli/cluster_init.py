"""``edge cluster init``: run once by the operator, before the first node starts on a new store.

As the role the nodes connect as, it makes sure that role can make the store's tables where its
search path leads, makes them, and gives the keys every node must share as an env file. Since
PostgreSQL 15 only the database's owner may create in ``public``: a role that only has ``CREATE``
on the database gets a schema of its own, named after it, which the default search path
(``"$user", public``) puts first. It never makes that schema where the role's search path
already finds the store's tables: new, empty tables there would hide them from the nodes.

A store already in use (a node claimed its signing key id or left its sealing canary) keeps the
keys its nodes have: no new ones are made for it. ``--data`` gives the keys of one node's data
dir instead of new ones, for a store copied from that node (``edge cluster copy-store``), and
checks them against what the store holds.
"""

from __future__ import annotations

import argparse
import os
import re
import secrets
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edge.cli.client import CliError
from edge.config import ADMIN_TOKEN_FILE, SECRET_KEY_FILE, ConfigError
from edge.store.postgres.grants import TABLE_RIGHTS

SIGNING_KEY_FILE = "signing-key.pem"  # edge.signing's, which loads cryptography: lazily
HEADER = "# the keys every node of this cluster shares (edge cluster init): keep them secret\n"


@dataclass(frozen=True)
class Keys:
    secret_key: str  # 64 hex characters, as EDGE_SECRET_KEY takes it
    admin_token: str
    signing_pem: str

    @property
    def kid(self) -> str:
        from edge.signing import Signer

        return Signer.load(Path("/nonexistent"), self.signing_pem).kid

    def env_file(self) -> str:
        """One line a variable, each value single-quoted so that a shell (``set -a; . FILE``)
        and systemd's ``EnvironmentFile=`` keep the PEM's ``\\n`` for the node to read."""
        pem = self.signing_pem.strip().replace("\n", "\\n")
        return (
            f"{HEADER}EDGE_SECRET_KEY='{self.secret_key}'\n"
            f"EDGE_ADMIN_TOKEN='{self.admin_token}'\n"
            f"EDGE_SIGNING_KEY='{pem}'\n"
        )


@dataclass(frozen=True)
class Store:
    """What init found and left: where the tables are, and the key claims a node wrote."""

    schema: str
    schema_made: bool
    claims: dict[bytes, bytes]


def init(args: argparse.Namespace) -> int:
    """``edge cluster init``: the store made ready, then the keys (new, or ``--data``'s) to
    stdout or a new ``--env-file``."""
    if not args.store or not str(args.store).startswith(("postgresql://", "postgres://")):
        raise CliError("give the cluster's store: --url postgresql://... or EDGE_STORE")
    keys = data_dir_keys(Path(args.data)) if args.data else new_keys()
    if args.env_file and os.path.lexists(args.env_file):  # refused before touching the store
        raise CliError(_exists(args.env_file))
    store = _prepare(args.store)
    _check_claims(store.claims, keys, args.data)
    made = ", made for this role" if store.schema_made else ""
    ready = f"the store is ready (its tables in schema {store.schema}{made})"
    if args.env_file:
        _write_new(Path(args.env_file), keys.env_file())
        print(f"{ready}; the keys every node shares are in {args.env_file} (mode 0600)")
    else:
        print(f"{ready}; give every node the keys below", file=sys.stderr)
        print(keys.env_file(), end="")
    return 0


def new_keys() -> Keys:
    from cryptography.hazmat.primitives.asymmetric import ec

    from edge.signing import Signer

    return Keys(
        secret_key=secrets.token_hex(32),
        admin_token=secrets.token_urlsafe(32),
        signing_pem=Signer(ec.generate_private_key(ec.SECP256R1())).pem(),
    )


def data_dir_keys(data: Path) -> Keys:
    """The keys a node made and kept in its data dir; never made here (``Signer.load`` and
    ``Settings.load`` would make missing ones)."""
    texts = {}
    for name in (SECRET_KEY_FILE, ADMIN_TOKEN_FILE, SIGNING_KEY_FILE):
        try:
            texts[name] = (data / name).read_text().strip()
        except OSError as exc:
            raise CliError(
                f"cannot read {data / name} ({exc.strerror}): --data takes the data dir of a "
                "node that made its own keys"
            ) from None
    try:
        if len(bytes.fromhex(texts[SECRET_KEY_FILE])) != 32:
            raise ValueError
    except ValueError:
        raise CliError(f"{data / SECRET_KEY_FILE} is not 64 hex characters") from None
    keys = Keys(texts[SECRET_KEY_FILE], texts[ADMIN_TOKEN_FILE], texts[SIGNING_KEY_FILE] + "\n")
    if "'" in keys.admin_token or not keys.admin_token.isprintable():  # it goes in quotes
        raise CliError(f"{data / ADMIN_TOKEN_FILE} is not a token edge made")
    try:
        _ = keys.kid  # a key that does not load is refused here, not at a node's start
    except ConfigError:
        raise CliError(f"{data / SIGNING_KEY_FILE} is not a P-256 private key (PEM)") from None
    return keys


def _prepare(url: str) -> Store:
    """The store's tables made (or found) where the role's search path leads, as that role."""
    try:
        import psycopg

        from edge.store.postgres.grants import MissingGrant
        from edge.store.postgres.store import create_schema
    except ImportError:
        raise CliError(
            "cluster commands need psycopg 3 and libpq: pip install 'edge[cluster]'"
        ) from None
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=10)
    except psycopg.ProgrammingError:  # libpq could not read the URL: no server was asked
        raise CliError(
            "the store's URL cannot be read: postgresql://ROLE[:PASSWORD]@HOST[:PORT]/DATABASE, "
            "with its password's special characters percent-encoded"
        ) from None
    except psycopg.Error as exc:
        raise CliError(_connect_failure(exc)) from None
    try:
        with conn:
            made = _make_room(conn)
            _check_rights(conn)  # first: what the role made itself is its own
            create_schema(conn)
            return Store(_state(conn)["schema"], made, _claims(conn))
    except MissingGrant as exc:  # a right taken away since it was looked at
        raise CliError(str(exc)) from None
    except psycopg.Error as exc:
        raise CliError(_refused(exc)) from None


def _state(conn: Any) -> dict[str, Any]:
    """The role, its database, the schema its search path leads to (where a table made without
    a schema goes), what it may create, and the schema the store's tables are found in."""
    row = conn.execute(
        "SELECT current_user, quote_ident(current_user), quote_ident(current_database()),"
        " current_schema(), coalesce(has_schema_privilege(current_schema(), 'CREATE'), false),"
        " has_database_privilege(current_database(), 'CREATE'),"
        " (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
        "   WHERE c.oid = to_regclass('store_meta')),"
        " current_setting('search_path')"
    ).fetchone()
    names = ("user", "role", "database", "schema", "may_create", "may_make_schema", "tables")
    return {**dict(zip(names, row[:7], strict=True)), "search_path": row[7]}


def _make_room(conn: Any) -> bool:
    """Make sure the role can create the tables where they will be (or are); True when it took
    a schema of its own for them."""
    found = _state(conn)
    role, schema, tables = found["role"], found["schema"], found["tables"]
    if tables is not None and tables != schema:
        raise CliError(
            f"the store's tables are in schema {tables}, but role {role} would make new, empty "
            f"ones in schema {schema}, first on its search path: ALTER ROLE {role} SET "
            f"search_path = {_quoted(conn, tables)}"
        )
    if found["may_create"] or (tables is not None and not _missing_tables(conn)):
        return False
    if tables is not None:  # some made, not all: the rest would be made there
        raise CliError(
            f"role {role} may not create in schema {tables}, where some of the store's tables "
            f"are: as the PostgreSQL superuser, GRANT CREATE ON SCHEMA {_quoted(conn, tables)} "
            f"TO {role}"
        )
    if not found["may_make_schema"]:
        raise CliError(
            f"role {role} may not create in schema {schema or 'public'} nor make a schema of "
            f"its own: as the PostgreSQL superuser, GRANT CREATE ON DATABASE "
            f"{found['database']} TO {role} (or make it the database's owner)"
        )
    conn.execute("CREATE SCHEMA IF NOT EXISTS AUTHORIZATION CURRENT_USER")
    after = _state(conn)
    if after["may_create"]:
        return True
    if after["schema"] != after["user"]:
        raise CliError(
            f"made schema {role}, but role {role}'s search path ({after['search_path']}) does "
            f'not lead there: ALTER ROLE {role} SET search_path = "$user", public'
        )
    raise CliError(
        f"schema {role} is not role {role}'s to create in: as the PostgreSQL superuser, GRANT "
        f"CREATE ON SCHEMA {role} TO {role}"
    )


def check_role(conn: Any) -> None:
    """For the store's other commands, before they make sure of the tables: what the role
    cannot do, in one line, rather than PostgreSQL's refusal."""
    found = _state(conn)
    if not found["may_create"] and _missing_tables(conn):
        raise CliError(
            f"role {found['role']} may not make the store's tables in schema "
            f"{found['schema'] or 'public'}: run edge cluster init --url ... once, as that role "
            "(it makes room for them, or names the grant missing)"
        )
    _check_rights(conn)


def _table_names() -> list[str]:
    from edge.store.postgres.store import TABLE_NAMES  # psycopg: the cluster extra, loaded late

    return TABLE_NAMES


def _missing_tables(conn: Any) -> list[str]:
    rows = conn.execute(
        "SELECT t FROM unnest(%s::text[]) AS t WHERE to_regclass(t) IS NULL", (_table_names(),)
    ).fetchall()
    return [row[0] for row in rows]


def _check_rights(conn: Any) -> None:
    """Refuse tables there that the role may not read and write (made by another role, say a
    restore run as the superuser): a node would fail on its first write."""
    # has_table_privilege with several privileges is true when any one is held: one by one
    lacking = [
        row[0]
        for row in conn.execute(
            "SELECT t FROM unnest(%s::text[]) AS t, unnest(%s::text[]) AS p"
            " WHERE to_regclass(t) IS NOT NULL AND NOT has_table_privilege(to_regclass(t), p)"
            " GROUP BY t ORDER BY t",
            (_table_names(), list(TABLE_RIGHTS)),
        ).fetchall()
    ]
    if lacking:
        found = _state(conn)
        raise CliError(
            f"role {found['role']} may not read and write the store's tables "
            f"({', '.join(name.strip(chr(34)) for name in lacking)}): as their owner, GRANT "
            f"{', '.join(TABLE_RIGHTS)} ON ALL TABLES IN SCHEMA {_quoted(conn, found['schema'])}"
            f" TO {found['role']}"
        )


def _claims(conn: Any) -> dict[bytes, bytes]:
    """The signing key id and the sealing canary, where a node claimed them."""
    from psycopg import sql

    from edge.store.postgres.store import TABLES
    from edge.store.sealcheck import CANARY_KEY
    from edge.store.signcheck import KEY_ID

    rows = conn.execute(
        sql.SQL("SELECT key, value FROM {} WHERE key = ANY(%s::bytea[])").format(TABLES["meta"]),
        ([KEY_ID, CANARY_KEY],),
    ).fetchall()
    return {bytes(key): bytes(value) for key, value in rows}


def _check_claims(claims: dict[bytes, bytes], keys: Keys, data: str | None) -> None:
    """New keys only for a store no node has started on; a data dir's only if they are the ones
    the store was written with."""
    from edge.sealing import Sealer, SealError
    from edge.store.sealcheck import CANARY_KEY, CANARY_PLACE
    from edge.store.signcheck import KEY_ID

    if not claims:
        return
    if data is None:
        raise CliError(
            "the store is already initialised (its tables are ready): its nodes share keys "
            "already (a node claimed the signing key id and the sealing canary); give any new "
            "node those keys, not new ones"
        )
    kid = claims.get(KEY_ID, b"").decode("ascii", "replace")
    if kid and kid != keys.kid:
        raise CliError(
            f"the signing key of {data} (key id {keys.kid}) is not the store's (key id {kid}): "
            "give the data dir of the node the store was copied from"
        )
    if CANARY_KEY in claims:
        try:
            Sealer(bytes.fromhex(keys.secret_key)).open(claims[CANARY_KEY], CANARY_PLACE)
        except SealError:
            raise CliError(
                f"the sealing key of {data} ({SECRET_KEY_FILE}) does not open the store's "
                "secrets: give the data dir of the node the store was copied from"
            ) from None


def _write_new(path: Path, text: str) -> None:
    """``text`` in a new file only the operator's user may read; an existing one is kept."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        raise CliError(_exists(path)) from None
    except OSError as exc:
        raise CliError(f"cannot write {path}: {exc.strerror}") from None
    with os.fdopen(fd, "w") as handle:
        handle.write(text)


def _exists(path: str | Path) -> str:
    return (
        f"{path} exists already: edge cluster init never overwrites keys; remove it or give "
        "another --env-file"
    )


def _quoted(conn: Any, name: str) -> str:
    """``name`` as an SQL identifier the operator can paste, quoted only where it must be."""
    return str(conn.execute("SELECT quote_ident(%s)", (name,)).fetchone()[0])


def _refused(exc: Exception) -> str:
    from edge.cli.cluster import _postgres_failure

    return f"{_postgres_failure(exc)} (check --url / EDGE_STORE and the role's rights)"


# The server's words for a refused connection (a connection failure has no SQLSTATE in psycopg);
# matched, never shown: the rest of the message may quote the connection string.
_CONNECT_REFUSALS = (
    (
        re.compile(r"does not have CONNECT privilege"),
        "the role may not connect to the database: as the PostgreSQL superuser, GRANT CONNECT "
        "ON DATABASE <database> TO <role>",
    ),
    (
        re.compile(r'FATAL: +role "[^"]*" does not exist'),
        "no such role: make it first (createuser, as the PostgreSQL superuser)",
    ),
    (
        re.compile(r'FATAL: +database "[^"]*" does not exist'),
        "no such database: make it first (createdb, as the PostgreSQL superuser)",
    ),
    (re.compile(r"password authentication failed"), "the store refused the role's password"),
)


def _connect_failure(exc: Exception) -> str:
    said = str(exc)
    return next(
        (meaning for pattern, meaning in _CONNECT_REFUSALS if pattern.search(said)),
        "cannot reach the PostgreSQL store (check --url / EDGE_STORE and that PostgreSQL is up)",
    )
