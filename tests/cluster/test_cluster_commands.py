"""``edge cluster nodes / leases / move / drain`` against a real PostgreSQL store (the leases
of edge.store.postgres.leases) and, for ``move``, a real HAProxy's pins (issue 28); ``edge
cluster init`` as roles of each kind the nodes may connect as (issue 36)."""

from __future__ import annotations

import json
import re
import secrets
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
from support.postgres import PostgresServer, execute, require_psycopg

require_psycopg()

from edge.config import ADMIN_TOKEN_FILE, SECRET_KEY_FILE  # noqa: E402
from edge.domain import ids  # noqa: E402
from edge.signing import SIGNING_KEY_FILE, Signer  # noqa: E402
from edge.store.postgres.leases import Leases  # noqa: E402
from edge.store.postgres.store import open_postgres_store  # noqa: E402
from edge.store.signcheck import KEY_ID  # noqa: E402


async def edge(*args: str) -> trio.CompletedProcess[bytes]:
    return await trio.run_process(
        [sys.executable, "-m", "edge", "cluster", *args],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )


@pytest.fixture
async def two_nodes(pg_url: str):  # type: ignore[no-untyped-def]
    async with open_postgres_store(pg_url) as store:
        a = Leases(store.pool, "node-a", "10.0.0.1:8080")
        b = Leases(store.pool, "node-b", "10.0.0.2:8080")
        await a.heartbeat()
        await b.heartbeat()
        yield a, b


async def test_nodes_and_leases_are_listed_as_the_store_has_them(two_nodes, pg_url) -> None:
    a, _ = two_nodes
    project = ids.new_project_id()
    await a.acquire(project)
    nodes = await edge("nodes", "--store", pg_url, "--json")
    assert nodes.returncode == 0, nodes.stderr
    listed = json.loads(nodes.stdout)["items"]
    assert [(n["node_id"], n["address"], n["alive"]) for n in listed] == [
        ("node-a", "10.0.0.1:8080", True),
        ("node-b", "10.0.0.2:8080", True),
    ]
    leases = await edge("leases", "--store", pg_url)
    line = leases.stdout.decode().strip()
    assert line.startswith(f"{project}  node-a  epoch 1  live ")


async def test_move_fences_the_holder_at_once_and_drain_ends_a_nodes_leases(
    two_nodes, pg_url
) -> None:
    a, b = two_nodes
    moved, kept = ids.new_project_id(), ids.new_project_id()
    await a.acquire(moved)
    await a.acquire(kept)
    done = await edge("move", moved, "node-b", "--store", pg_url, "--no-pin", "--json")
    assert done.returncode == 0, done.stderr
    lease = json.loads(done.stdout)
    assert (lease["owner"], lease["epoch"], lease["live"]) == ("node-b", 2, True)
    assert await a.heartbeat() == [moved]  # the old holder learns it lost the project
    assert (await b.acquire(moved)).epoch == 3  # the new one takes it up
    nowhere = await edge("move", kept, "node-z", "--store", pg_url, "--no-pin")
    assert nowhere.returncode == 1 and b"no live node node-z" in nowhere.stderr
    drained = await edge("drain", "node-a", "--store", pg_url, "--no-haproxy", "--json")
    assert json.loads(drained.stdout) == {"node": "node-a", "released": [kept]}
    assert (await b.acquire(kept)).owner == "node-b"  # free for the next node at once


async def test_without_a_store_or_with_a_wrong_one_it_says_so_in_one_line() -> None:
    for args in (("nodes",), ("leases", "--store", "mysql://x"), ("drain", "n", "--store", "x")):
        answer = await edge(*args)
        assert answer.returncode == 1
        assert answer.stderr.decode().count("\n") == 1, answer.stderr
    gone = await edge("nodes", "--store", "postgresql:///nowhere?host=/nonexistent")
    assert gone.returncode == 1 and b"cannot reach the cluster's store" in gone.stderr


async def test_a_new_store_has_no_nodes_and_a_bad_url_never_echoes_its_password(pg_url) -> None:
    fresh = await edge("leases", "--store", pg_url)  # no tables yet: made, then listed
    assert (fresh.returncode, fresh.stdout.decode().strip()) == (0, "no leases")
    bad = await edge("nodes", "--store", "postgresql://edge:s3cr%zzet@127.0.0.1:1/x")
    said = bad.stderr.decode()
    assert bad.returncode == 1 and said.count("\n") == 1, said
    assert "s3cr" not in said and "Traceback" not in said


async def test_url_is_the_stores_address_as_store_was(two_nodes, pg_url) -> None:
    for option in ("--url", "--store"):
        listed = await edge("nodes", option, pg_url, "--json")
        assert listed.returncode == 0, listed.stderr
        assert len(json.loads(listed.stdout)["items"]) == 2


# edge cluster init: roles of their own on the session's server (a role is the server's, not a
# database's), each on a new database


async def new_role(postgres: PostgresServer, *, owner: bool = False, create: bool = False) -> Role:
    """A role that logs in, and a database of its own name: the role its ``owner``, or given
    ``create`` on it, or neither."""
    name = f"init_{secrets.token_hex(4)}"
    statements = [
        f"CREATE ROLE {name} LOGIN",
        f"CREATE DATABASE {name}" + (f" OWNER {name}" if owner else ""),
        *([f"GRANT CREATE ON DATABASE {name} TO {name}"] if create else []),
    ]
    for statement in statements:
        await trio.to_thread.run_sync(execute, postgres.url(), statement)
    return Role(name, f"postgresql://{name}@/{name}?host={postgres.socket_dir}", postgres)


class Role:
    def __init__(self, name: str, url: str, postgres: PostgresServer) -> None:
        self.name, self.url, self.postgres = name, url, postgres

    async def as_superuser(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        """``query`` on the role's database, as PostgreSQL's superuser."""
        return await trio.to_thread.run_sync(
            partial(execute, self.postgres.url(self.name), query, *params)
        )

    async def as_role(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        return await trio.to_thread.run_sync(partial(execute, self.url, query, *params))

    async def schemas_of_tables(self) -> list[str]:
        rows = await self.as_superuser(
            "SELECT DISTINCT schemaname FROM pg_tables WHERE tablename = ANY(%s)",
            ["store_meta", "store_records", "nodes", "leases"],
        )
        return sorted(row[0] for row in rows)


async def sourced(env_file: str, tmp_path: Path) -> dict[str, str]:
    """The variables of an env file as a shell reads it (``set -a; . FILE``)."""
    path = tmp_path / f"sourced-{secrets.token_hex(4)}.env"
    path.write_text(env_file)
    names = ("EDGE_SECRET_KEY", "EDGE_ADMIN_TOKEN", "EDGE_SIGNING_KEY")
    printed = await trio.run_process(
        [
            *("bash", "-c", 'set -a; . "$1"; for n in "${@:2}"; do printf "%s\\0" "${!n}"; done'),
            *("_", str(path), *names),
        ],
        capture_stdout=True,
    )
    return dict(zip(names, printed.stdout.decode().split("\0")[:3], strict=True))


def one_line(done: trio.CompletedProcess[bytes], *words: str) -> str:
    said = done.stderr.decode()
    assert done.returncode == 1 and said.count("\n") == 1 and "Traceback" not in said, said
    for word in words:
        assert word in said, (word, said)
    assert done.stdout == b""
    return said


async def test_init_on_a_database_the_role_owns_makes_the_tables_and_prints_the_keys(
    postgres, tmp_path
) -> None:
    role = await new_role(postgres, owner=True)
    done = await edge("init", "--url", role.url)
    assert done.returncode == 0, done.stderr
    assert "schema public" in done.stderr.decode()
    keys = await sourced(done.stdout.decode(), tmp_path)
    assert re.fullmatch(r"[0-9a-f]{64}", keys["EDGE_SECRET_KEY"])
    assert len(keys["EDGE_ADMIN_TOKEN"]) >= 43
    # one line in the file, read by the node as EDGE_SIGNING_KEY is (its \n for newlines)
    assert "\n" not in keys["EDGE_SIGNING_KEY"] and "\\n" in keys["EDGE_SIGNING_KEY"]
    assert Signer.load(tmp_path / "none", keys["EDGE_SIGNING_KEY"]).kid
    assert done.stdout.decode().count("\n") == 4  # a comment, then one line a key
    assert await role.schemas_of_tables() == ["public"]  # it may create there: no schema made
    assert await role.as_superuser("SELECT 1 FROM pg_namespace WHERE nspname = %s", role.name) == []

    again = await edge("init", "--url", role.url)  # no node started on it: new keys still
    assert again.returncode == 0, again.stderr
    assert (await sourced(again.stdout.decode(), tmp_path)) != keys

    # a node started on it: its keys are the store's from now on
    await role.as_role("INSERT INTO store_meta (key, value) VALUES (%s, %s)", KEY_ID, b"kid-1")
    one_line(await edge("init", "--url", role.url), "already initialised", "those keys")


async def test_init_gives_a_role_with_only_create_on_the_database_a_schema_of_its_own(
    postgres,
) -> None:
    role = await new_role(postgres, create=True)
    for _ in range(2):  # the second finds it all made
        done = await edge("init", "--url", role.url)
        assert done.returncode == 0, done.stderr
    assert f"schema {role.name}" in done.stderr.decode()
    assert await role.schemas_of_tables() == [role.name]
    # as a node starting on it makes sure of the tables, then reads and writes them
    leases = await edge("leases", "--url", role.url)
    assert (leases.returncode, leases.stdout.decode().strip()) == (0, "no leases"), leases.stderr


async def test_init_names_the_grant_a_role_lacks_and_makes_nothing(postgres, tmp_path) -> None:
    bare = await new_role(postgres)
    keys = tmp_path / "keys.env"
    one_line(
        await edge("init", "--url", bare.url, "--env-file", str(keys)),
        f"GRANT CREATE ON DATABASE {bare.name} TO {bare.name}",
    )
    assert not keys.exists() and await bare.schemas_of_tables() == []
    # the other store commands send the operator to init
    one_line(await edge("nodes", "--url", bare.url), "run edge cluster init")

    # tables in public made by another role: a schema of its own would hide them, so none
    hidden = await new_role(postgres, create=True)
    await hidden.as_superuser("CREATE TABLE store_meta (key bytea PRIMARY KEY, value bytea)")
    one_line(
        await edge("init", "--url", hidden.url),
        f"GRANT CREATE ON SCHEMA public TO {hidden.name}",
    )
    assert await hidden.schemas_of_tables() == ["public"]

    # tables it may create beside, but not read and write (a restore run as the superuser)
    foreign = await new_role(postgres, owner=True)
    await foreign.as_superuser("CREATE TABLE leases (project_id text PRIMARY KEY)")
    one_line(
        await edge("init", "--url", foreign.url),
        "leases",
        f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {foreign.name}",
    )


async def test_init_writes_a_new_env_file_only_its_user_reads_and_never_overwrites_one(
    postgres, tmp_path
) -> None:
    role = await new_role(postgres, owner=True)
    keys = tmp_path / "cluster-keys.env"
    done = await edge("init", "--url", role.url, "--env-file", str(keys))
    assert done.returncode == 0, done.stderr
    assert str(keys) in done.stdout.decode() and "mode 0600" in done.stdout.decode()
    assert keys.stat().st_mode & 0o777 == 0o600
    written = keys.read_text()
    assert set(await sourced(written, tmp_path)) == {
        "EDGE_SECRET_KEY",
        "EDGE_ADMIN_TOKEN",
        "EDGE_SIGNING_KEY",
    }
    one_line(await edge("init", "--url", role.url, "--env-file", str(keys)), "exists already")
    assert keys.read_text() == written


async def test_init_with_a_data_dir_gives_its_keys_if_they_are_the_stores(
    postgres, tmp_path
) -> None:
    from edge.sealing import Sealer
    from edge.store.sealcheck import CANARY_KEY, CANARY_PLACE

    mine, other = node_data_dir(tmp_path / "mine"), node_data_dir(tmp_path / "other")
    role = await new_role(postgres, owner=True)
    done = await edge("init", "--url", role.url, "--data", str(mine))
    assert done.returncode == 0, done.stderr
    keys = await sourced(done.stdout.decode(), tmp_path)
    assert keys["EDGE_SECRET_KEY"] == (mine / SECRET_KEY_FILE).read_text().strip()
    assert keys["EDGE_ADMIN_TOKEN"] == (mine / ADMIN_TOKEN_FILE).read_text().strip()
    assert (
        keys["EDGE_SIGNING_KEY"].replace("\\n", "\n") + "\n"
        == (mine / SIGNING_KEY_FILE).read_text()
    )

    # the store copied from that node: its key id and canary are the node's
    secret = bytes.fromhex(keys["EDGE_SECRET_KEY"])
    for key, value in (
        (KEY_ID, Signer.load(mine).kid.encode()),
        (CANARY_KEY, Sealer(secret).seal("edge", CANARY_PLACE)),
    ):
        await role.as_role("INSERT INTO store_meta (key, value) VALUES (%s, %s)", key, value)
    again = await edge("init", "--url", role.url, "--data", str(mine))
    assert again.returncode == 0 and await sourced(again.stdout.decode(), tmp_path) == keys
    one_line(await edge("init", "--url", role.url, "--data", str(other)), "is not the store's")
    one_line(await edge("init", "--url", role.url), "already initialised")
    await role.as_role("DELETE FROM store_meta WHERE key = %s", KEY_ID)
    one_line(await edge("init", "--url", role.url, "--data", str(other)), "does not open")
    one_line(await edge("init", "--url", role.url, "--data", str(tmp_path)), SECRET_KEY_FILE)


def node_data_dir(data: Path) -> Path:
    """A data dir with the keys a node makes and keeps there on its first start."""
    data.mkdir()
    (data / SECRET_KEY_FILE).write_text(secrets.token_hex(32) + "\n")
    (data / ADMIN_TOKEN_FILE).write_text(secrets.token_urlsafe(32) + "\n")
    Signer.load(data)  # makes signing-key.pem
    return data


async def test_init_fails_in_one_line_that_never_shows_the_url() -> None:
    one_line(await edge("init"), "--url postgresql://")
    bad = one_line(await edge("init", "--url", "postgresql://edge:s3cr%zzet@127.0.0.1:1/x"))
    assert "s3cr" not in bad
    gone = one_line(await edge("init", "--url", "postgresql://edge:s3cret@127.0.0.1:1/x"))
    assert "cannot reach" in gone and "s3cret" not in gone


def test_the_data_dirs_key_file_is_the_one_the_node_keeps() -> None:
    from edge.cli import cluster_init
    from edge.signing import SIGNING_KEY_FILE as KEPT

    assert cluster_init.SIGNING_KEY_FILE == KEPT
