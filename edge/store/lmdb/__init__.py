"""The LMDB engine of the store interface (``edge.store.engine``): ``store`` (the environment,
its reads and its commit) and ``copy`` (its side of a copy between engines)."""
