"""The store: one interface (``engine``: the databases, the ops a write is made of, its errors,
the features in which engines differ), two engines that each import only it, and what the node
builds on it whichever engine it has.

- ``lmdb``: the embedded engine, one environment in the data dir, one node (the default).
- ``postgres``: the shared engine of cluster mode, one table per database on a server, with the
  leases that fence each node's commits and the notices the nodes send each other.
- ``writer``: the one writer task that group-commits every actor's writes through the engine's
  ``commit``; ``outbox`` and ``notifyq``: the durable follow-up and notification queues;
  ``keys`` and ``codec``: the key schema of fixed-width prefixes and the msgpack values with a
  schema version; ``accounts``, ``sealcheck``, ``signcheck``: rows and checks of their own.
- ``copy``: a whole store from one engine into the other, the one module that knows both;
  ``backup``: a data dir's LMDB store and keys, copied live and restored.
"""
