"""Reproducible benchmarks of the node against the ceiling of its own stack (``make bench``).

Entry point: ``python -m bench.run``. Modules: ``servers`` (starting the node and the baselines
as pinned child processes), ``baselines`` (bare Quart-Trio and raw ASGI apps on the node's
Hypercorn config), ``wrk`` (closed-loop peak runs), ``loadgen`` (open-loop latency),
``events`` (signed Stripe event pools), ``fill`` (a store of 1,000,000 events for start-up),
``profile`` (py-spy evidence when a target is missed).

``python -m bench.cluster`` (``make bench-cluster``): cluster mode, one node on PostgreSQL
against one on LMDB and three nodes against one behind HAProxy, reusing the modules above.

``python -m bench.peers`` (``make bench-peers``): the node against the webhook receivers
merchants write instead (FastAPI on PostgreSQL and SQLite, Express on PostgreSQL).
"""
