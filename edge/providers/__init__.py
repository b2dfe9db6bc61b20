"""Provider adapters behind one small interface (``edge.providers.base.Provider``)."""
