"""A project's two modes: ``test`` (the providers' sandboxes, no money moves) and ``live``.

Every API key, credential set, transaction and event belongs to one of them. ``MODES`` is also
the order answers list them in (a provider's settings: its test credentials, then its live
ones), so it is defined here once.
"""

from __future__ import annotations

TEST = "test"
LIVE = "live"
MODES = (TEST, LIVE)
