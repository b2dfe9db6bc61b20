"""Provider simulators: loopback HTTP servers speaking each provider's API subset, hosted
checkout pages and signed webhook senders. Used by tests, ``edge serve --demo`` and
``edge trigger``; they ship with the node and read nothing outside the package.

``registry`` lists each provider's ``Registration`` (its simulator, ``edge trigger``'s events and
the demo's wiring), made in the provider's own package (``stripe/registration.py`` ...). The
node's code never imports this package: the demo does, and the node's trigger loads it on its
first use (``edge.node``)."""
