"""edge: a payment integration node.

One process serves buyers' checkouts and status polls, providers' webhooks and merchants' API
and dashboard (``edge.http``), each project's work owned by one actor (``edge.actors``) that
persists it through one writer (``edge.store``). It runs on either of two engines: alone on the
embedded LMDB store in its data dir, owning every project; or as one of N nodes on a shared
PostgreSQL (cluster mode, ``EDGE_STORE``), serving each project only under its lease, whose
epoch every write carries so that the store refuses a node that lost it. ``edge.node`` puts the
pieces together; docs/architecture.md draws both pictures.
"""
