"""``edge cluster``: cluster mode's operator commands. ``init`` prepares a new store and gives the
keys every node shares (``edge.cli.cluster_init``); ``nodes`` and ``leases`` read the shared
PostgreSQL store (``--url``, else ``EDGE_STORE``); ``move`` hands a project's lease to a named
node (fencing out its holder at once) and pins it there in HAProxy; ``drain`` ends every lease of
a node. ``haproxy-config`` prints the configuration that routes each project to one node;
``pins``, ``pin`` and ``unpin`` change HAProxy's routing live, through its runtime API.

For every other command ``--url`` is a node's address; here, where a command talks to the store
and not to a node, it is the store's (``--store``, its first name, still works)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import trio

from edge.cli.client import CliError, show
from edge.cli.cluster_init import check_role, init
from edge.cli.parsing import Subcommands, add_group
from edge.cluster.haproxy import PROJECT_ID, Node, RuntimeApi, render
from edge.domain.terminal import printable
from edge.errors import Unavailable

T = TypeVar("T")

DEFAULT_PINS = "/etc/haproxy/edge-pins.map"
DEFAULT_SOCKET = "/run/haproxy/admin.sock"


def add_commands(commands: Subcommands) -> None:
    group = add_group(commands, "cluster", "several nodes behind HAProxy: routing and pins")
    first = _command(
        group,
        "init",
        init,
        "once, before the first node: the store's tables, and the keys every node shares",
        store=True,
        json=False,
    )
    first.add_argument(
        "--data",
        metavar="DATA_DIR",
        help="share the keys this node's data dir holds (secret.key, signing-key.pem, "
        "admin-token; a store copied from it) instead of making new ones",
    )
    first.add_argument(
        "--env-file",
        metavar="PATH",
        help="write the keys to PATH (made with mode 0600, never overwritten), not to stdout",
    )
    config = _command(
        group,
        "haproxy-config",
        _haproxy_config,
        "print the HAProxy configuration",
        haproxy=True,
        json=False,
    )
    config.add_argument(
        "--node",
        action="append",
        required=True,
        metavar="NAME=HOST:PORT",
        help="a node, once for each (its name is HAProxy's server name)",
    )
    config.add_argument(
        "--bind",
        default="*:80",
        metavar="HOST:PORT",
        help="where HAProxy listens (default *:80, a port only root may bind: 127.0.0.1:8000, "
        "say, for HAProxy run as another user)",
    )
    _command(group, "pins", _pins, "the projects pinned to a node", haproxy=True)
    _command(
        group,
        "pin",
        _pin,
        "send every request for a project to one node, now",
        "project",
        "node",
        haproxy=True,
    )
    _command(
        group, "unpin", _unpin, "a project back to the consistent hash", "project", haproxy=True
    )
    _command(group, "nodes", _nodes, "the nodes that beat their heartbeat, and when", store=True)
    _command(group, "leases", _leases, "which node serves which project, to when", store=True)
    move = _command(
        group,
        "move",
        _move,
        "hand a project to a node now (and pin it there)",
        "project",
        "node",
        store=True,
        haproxy=True,
    )
    move.add_argument("--no-pin", action="store_true", help="leave HAProxy's routing as it is")
    drain = _command(
        group,
        "drain",
        _drain,
        "take a node out of HAProxy's hash, end its leases",
        "node",
        store=True,
        haproxy=True,
    )
    drain.add_argument(
        "--no-haproxy", action="store_true", help="end the leases only, routing unchanged"
    )
    _command(
        group, "undrain", _undrain, "a drained node back in HAProxy's hash", "node", haproxy=True
    )
    copy = _command(
        group,
        "copy-store",
        _copy_store,
        "copy a stopped store into an empty one, LMDB <-> PostgreSQL",
    )
    for option, way in (("--from", "source"), ("--to", "target")):
        copy.add_argument(
            option,
            dest=way,
            required=True,
            metavar="DATA_DIR|postgresql://...",
            help=f"the {way}: a node's data dir (its LMDB store) or a PostgreSQL URL",
        )
    signing = _command(
        group,
        "signing-key",
        _signing_key,
        "the id of the key every node must sign with",
        store=True,
    )
    signing.add_argument(
        "--forget",
        action="store_true",
        help="forget it (a lost key): the next node to start makes its own key the cluster's",
    )


def _command(
    group: Subcommands,
    name: str,
    run: Callable[[argparse.Namespace], int],
    help: str,
    *positionals: str,
    store: bool = False,
    haproxy: bool = False,
    json: bool = True,
) -> argparse.ArgumentParser:
    """An ``edge cluster`` command: its positionals, then the options of what it talks to (the
    shared store, HAProxy's admin socket and pins map) and ``--json``."""
    parser = group.add_parser(name, help=help)
    for positional in positionals:
        parser.add_argument(positional)
    if store:
        parser.add_argument(
            "--url",
            "--store",
            dest="store",
            metavar="postgresql://...",
            default=os.environ.get("EDGE_STORE"),
            help="the cluster's PostgreSQL store, as its nodes' EDGE_STORE (default EDGE_STORE)",
        )
    if haproxy:
        parser.add_argument(
            "--pins-map",
            default=DEFAULT_PINS,
            metavar="PATH",
            help=f"HAProxy's map of pinned projects (default {DEFAULT_PINS})",
        )
        parser.add_argument(
            "--haproxy-socket",
            default=DEFAULT_SOCKET,
            metavar="PATH",
            help=f"HAProxy's admin socket (default {DEFAULT_SOCKET})",
        )
    if json:
        parser.add_argument("--json", action="store_true", help="print JSON")
    parser.set_defaults(run=run)
    return parser


def _haproxy_config(args: argparse.Namespace) -> int:
    nodes = []
    for given in args.node:
        name, sep, address = given.partition("=")
        if not sep:
            raise CliError(f"--node takes NAME=HOST:PORT, not {printable(given)}")
        try:
            nodes.append(Node(name, address))
        except ValueError as exc:
            raise CliError(printable(str(exc))) from None
    try:
        text = render(
            nodes,
            bind=args.bind,
            pins_map=Path(args.pins_map).absolute(),
            admin_socket=Path(args.haproxy_socket).absolute(),
        )
    except ValueError as exc:
        raise CliError(str(exc)) from None
    print(text, end="")
    return 0


def _api(args: argparse.Namespace) -> RuntimeApi:
    # absolute, as haproxy-config writes them: HAProxy names a map by the path it was given
    return RuntimeApi(Path(args.haproxy_socket).absolute(), Path(args.pins_map).absolute())


def _pins(args: argparse.Namespace) -> int:
    pins = _call(lambda: _api(args).pins())
    human = "\n".join(f"{p}  {n}" for p, n in sorted(pins.items())) or "no pinned projects"
    show(args, {"pins": pins}, human)
    return 0


def _pin(args: argparse.Namespace) -> int:
    _call(lambda: _api(args).pin(args.project, args.node))
    show(args, {"project": args.project, "node": args.node}, f"{args.project} -> {args.node}")
    return 0


def _unpin(args: argparse.Namespace) -> int:
    _call(lambda: _api(args).unpin(args.project))
    show(args, {"project": args.project, "node": None}, f"{args.project} -> consistent hash")
    return 0


def _in_store(args: argparse.Namespace, work: Callable[[Any], Awaitable[T]]) -> T:
    """``work(pool)`` on the cluster's store; its failures as one line."""
    if not args.store or not str(args.store).startswith(("postgresql://", "postgres://")):
        raise CliError("give the cluster's store: --url postgresql://... or EDGE_STORE")
    try:
        from edge.store.postgres.store import ConnectionPool
    except ImportError:
        raise CliError(
            "cluster commands need psycopg 3 and libpq: pip install 'edge[cluster]'"
        ) from None

    import psycopg

    from edge.store.postgres.grants import MissingGrant
    from edge.store.postgres.store import create_schema

    def prepare(conn: Any) -> None:
        check_role(conn)
        create_schema(conn)  # a new cluster's store may have no tables yet

    async def run() -> T:
        pool = ConnectionPool(args.store, 1)
        try:
            await pool.run(prepare)
            return await work(pool)
        finally:
            pool.close()

    try:
        return trio.run(run)
    except Unavailable:
        raise CliError("cannot reach the cluster's store (--url / EDGE_STORE)") from None
    except MissingGrant as exc:  # a right taken away since check_role looked
        raise CliError(str(exc)) from None
    except psycopg.errors.InsufficientPrivilege:
        raise CliError(
            "the store's role may not make or use its tables: run edge cluster init --url ... "
            "once, as that role (it names the grant missing)"
        ) from None
    except psycopg.Error as exc:
        raise CliError(
            f"{_postgres_failure(exc)} (check --url / EDGE_STORE and the role's rights)"
        ) from None


def _nodes(args: argparse.Namespace) -> int:
    from edge.store.postgres.leases import Leases

    found = _in_store(args, lambda pool: Leases(pool, "operator", "").nodes())
    show(
        args,
        {"items": [_json(n) for n in found]},
        "\n".join(
            f"{n.node_id}  {n.address}  {'alive' if n.alive else 'gone '}  "
            f"{n.heartbeat_at.isoformat(timespec='seconds')}"
            for n in found
        )
        or "no nodes",
    )
    return 0


def _leases(args: argparse.Namespace) -> int:
    from edge.store.postgres.leases import Leases

    found = _in_store(args, lambda pool: Leases(pool, "operator", "").leases())
    show(
        args,
        {"items": [_json(lease) for lease in found]},
        "\n".join(_lease_line(lease) for lease in found) or "no leases",
    )
    return 0


def _move(args: argparse.Namespace) -> int:
    from edge.store.postgres.leases import Leases, UnknownNode

    if not re.fullmatch(PROJECT_ID, args.project):
        raise CliError(f"not a project id: {printable(args.project)}")

    async def move(pool: Any) -> Any:
        try:
            return await Leases(pool, "operator", "").move(args.project, args.node)
        except UnknownNode as exc:
            raise CliError(printable(str(exc))) from None

    lease = _in_store(args, move)
    if not args.no_pin:
        try:
            _call(lambda: _api(args).pin(args.project, args.node))
        except CliError as exc:
            raise CliError(
                f"the lease moved to {args.node} (epoch {lease.epoch}), but HAProxy was not "
                f"told: {exc}; pin it with edge cluster pin {args.project} {args.node}"
            ) from None
    show(args, _json(lease), _lease_line(lease))
    return 0


def _drain(args: argparse.Namespace) -> int:
    from edge.store.postgres.leases import drain_node

    if not args.no_haproxy:  # first: no new request may reach it to take a lease back
        _call(lambda: _api(args).set_state(args.node, "drain"))
    released = _in_store(args, lambda pool: drain_node(pool, args.node))
    show(
        args,
        {"node": args.node, "released": released},
        f"{args.node}: {len(released)} leases ended"
        + ("" if args.no_haproxy else "; HAProxy sends it no new request"),
    )
    return 0


def _undrain(args: argparse.Namespace) -> int:
    _call(lambda: _api(args).set_state(args.node, "ready"))
    show(args, {"node": args.node, "state": "ready"}, f"{args.node}: back in HAProxy's hash")
    return 0


def _copy_store(args: argparse.Namespace) -> int:
    import lmdb

    from edge.store.copy import copy_store, is_postgres
    from edge.store.engine import CopyRefused

    where = {
        way: "the PostgreSQL store" if is_postgres(given) else f"the data dir {given}"
        for way, given in (("source", args.source), ("target", args.target))
    }
    for option, given in (("--from", args.source), ("--to", args.target)):
        if "://" in given and not is_postgres(given):
            raise CliError(f"{option} takes a data dir or a postgresql:// URL")
    postgres_errors: tuple[type[Exception], ...] = ()
    if is_postgres(args.source) or is_postgres(args.target):
        try:
            import psycopg
        except ImportError:
            raise CliError(
                "a PostgreSQL store needs psycopg 3 and libpq: pip install 'edge[cluster]'"
            ) from None
        postgres_errors = (psycopg.Error,)
    if sys.stderr.isatty():  # a person waits: say something is happening
        print(f"copying {where['source']} into {where['target']} ...", file=sys.stderr)
    try:
        copied = copy_store(args.source, args.target)
    except CopyRefused as exc:
        raise CliError(printable(str(exc))) from None
    except postgres_errors as exc:
        raise CliError(f"{_postgres_failure(exc)}; nothing was copied") from None
    except lmdb.Error as exc:
        raise CliError(
            f"the LMDB store failed: {printable(str(exc))}; nothing was copied"
        ) from None
    except OSError as exc:
        raise CliError(
            f"the copy failed: {exc.strerror or exc} ({exc.filename}); nothing was copied"
        ) from None
    counts = ", ".join(f"{db} {n}" for db, n in copied.items())
    show(
        args,
        {"copied": copied},
        f"copied {sum(copied.values())} keys ({counts}) from {where['source']} into "
        f"{where['target']}",
    )
    return 0


def _signing_key(args: argparse.Namespace) -> int:
    from psycopg import sql

    from edge.store.postgres.store import TABLES
    from edge.store.signcheck import KEY_ID

    query = (
        "DELETE FROM {} WHERE key = %s RETURNING value"
        if args.forget
        else "SELECT value FROM {} WHERE key = %s"
    )

    async def run(pool: Any) -> Any:
        return await pool.run(
            lambda conn: conn.execute(sql.SQL(query).format(TABLES["meta"]), (KEY_ID,)).fetchone()
        )

    row = _in_store(args, run)
    kid = None if row is None else printable(bytes(row[0]).decode("ascii", "replace"))
    after = "the next node to start makes its key the cluster's"
    if args.forget:
        human = f"forgot key id {kid}: {after}" if kid else f"no key id was kept: {after}"
    else:
        human = kid or "no key id yet: the first node to start makes its key the cluster's"
    show(args, {"keyId": kid, "forgotten": bool(args.forget and kid)}, human)
    return 0


def _postgres_failure(exc: Exception) -> str:
    """A psycopg error in words of our own: never ``str(exc)``, whose PostgreSQL words may
    quote the connection string (its password)."""
    import psycopg  # loaded: the error is one of its own

    state = getattr(exc, "sqlstate", None)
    if state is None and isinstance(exc, psycopg.OperationalError):  # no server answered
        return "cannot reach the PostgreSQL store (check its URL and that PostgreSQL is up)"
    return f"the PostgreSQL store refused: {type(exc).__name__}" + (
        f", SQLSTATE {state}" if state else ""
    )


def _lease_line(lease: Any) -> str:
    state = "live " if lease.live else "ended"
    return (
        f"{lease.project_id}  {lease.owner}  epoch {lease.epoch}  {state}  "
        f"{lease.expires_at.isoformat(timespec='seconds')}"
    )


def _json(row: Any) -> dict[str, Any]:
    return {k: v.isoformat() if hasattr(v, "isoformat") else v for k, v in vars(row).items()}


def _call(do: Callable[[], T]) -> T:
    """``do``'s result; its failure as one line."""
    try:
        return do()
    except (ValueError, RuntimeError) as exc:
        raise CliError(printable(str(exc))) from None
    except OSError as exc:
        raise CliError(
            f"cannot reach HAProxy's admin socket: {exc.strerror or exc}; is HAProxy running "
            "with the configuration edge cluster haproxy-config prints (--haproxy-socket)?"
        ) from None
