"""Project actors and the node's background workers.

Each project's transactions, quota counters and rate buckets are owned by one actor that
handles the project's messages one at a time (``registry``, ``project``). Which projects a node
has actors for is its ownership strategy (``ownership``): on LMDB the one node owns them all;
on PostgreSQL each node only those it holds the lease of, taken, renewed, handed over and
given back as HAProxy's routing and the nodes' health decide. Handlers are coroutines that
await only the store's reads: run to their end in the caller's task on LMDB, awaited through
the actor's mailbox on PostgreSQL (``project.actor``). Beside the actors: the follow-up worker
and the notifier (the durable queues, each entry attempted by the node that owns its project),
asking providers (``sync``), and what the HTTP layer reads (``queries``, ``accounts``).
"""
