"""Provider simulators: loopback HTTP servers speaking each provider's API subset, hosted
checkout pages and signed webhook senders. Used by tests, ``edge serve --demo`` and
``edge trigger``; they ship with the node and read nothing outside the package."""
