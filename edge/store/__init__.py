"""The embedded LMDB store: one environment, a key schema of fixed-width prefixes, a msgpack
codec with a schema version, and one writer task that group-commits every actor's writes."""
