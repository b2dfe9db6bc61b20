"""The PostgreSQL engine of the store interface (``edge.store.engine``), cluster mode: ``store``
(the tables, the reads, the fenced commit), ``leases`` (which node serves which project),
``notices`` (word between the nodes), ``outage`` (the server out of reach, told once),
``grants`` (what the role lacks) and ``copy`` (its side of a copy between engines).

Nothing here is imported by a node on LMDB but ``leases`` and ``grants``, which load without
psycopg (the cluster extra): this package's own import loads nothing."""
