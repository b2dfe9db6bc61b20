"""What the store's PostgreSQL role lacks, said as the grant that gives it (issue 36): a node
started with a role that may not create or use the store's tables stops with one line naming
the statement to run, not a traceback. PostgreSQL 15 and later no longer let every role create
in schema ``public``, so a role that does not own its database meets this at first start."""

from __future__ import annotations

TABLE_RIGHTS = ("SELECT", "INSERT", "UPDATE", "DELETE")  # what the nodes' role does to the tables


class MissingGrant(Exception):
    """The role may not do what the node needs; the message names the grant."""


def cannot_create(role: str, database: str) -> MissingGrant:
    return MissingGrant(
        f"EDGE_STORE's role {role} may not create the store's tables in database {database}:"
        f" as its owner or a superuser run `GRANT CREATE ON DATABASE {database} TO {role}`"
        f" and then `edge cluster init` (or `ALTER DATABASE {database} OWNER TO {role}`);"
        " docs/cluster.md, step by step"
    )


def cannot_use(role: str, tables: list[str]) -> MissingGrant:
    return MissingGrant(
        f"EDGE_STORE's role {role} may not use the store's tables {', '.join(tables)}: as"
        f" their owner run `GRANT {', '.join(TABLE_RIGHTS)} ON {', '.join(tables)} TO {role}`"
    )
