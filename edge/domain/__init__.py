"""Pure domain rules of the node: identifiers, money, statuses, events, limits.

Nothing here does I/O, keeps global mutable state beyond id generators, or
imports from the rest of the project, so every rule can be tested in isolation
and reused by any actor. Import from the submodules directly.
"""
