"""Whether a provider is failing a project's buyers now (CONTRACT 4.7, issue 37): a method
whose provider fails on its side steps aside from the button, and comes back when a probe
succeeds.

Only failures on the provider's side count: a 5xx, no answer in time, an answer the node could
not read. A refusal of the merchant's own set-up (credentials refused) is a set-up error shown on
the dashboard, never "failing": the buyer could not be helped by another try either way, and the
merchant must see why.

``FAILING_AFTER`` such failures in a row, none older than ``WINDOW_S``, make it failing (a
buyer's retry and the next buyer's checkout are enough: well within 30 s while buyers come). Any
checkout it takes, or a probe it answers, makes it well again. While failing, a probe is due
every ``PROBE_S``, then less often (``PROBE_MAX_S``) while it keeps failing.

Pure: the caller passes ``now`` (seconds, any monotonic origin).
"""

from __future__ import annotations

from dataclasses import dataclass, field

FAILING_AFTER = 3
WINDOW_S = 60.0
PROBE_S = 10.0
PROBE_MAX_S = 60.0


@dataclass
class Health:
    failures: list[float] = field(default_factory=list)  # times of the failures in a row
    failing_since: float | None = None
    probe_at: float | None = None  # while failing: when the next probe is due
    probes: int = 0  # probes failed while failing (their spacing grows)

    @property
    def failing(self) -> bool:
        return self.failing_since is not None

    def failed(self, now: float) -> bool:
        """A checkout failed on the provider's side; True when this makes it failing."""
        self.failures = [t for t in self.failures if now - t < WINDOW_S] + [now]
        if self.failing or len(self.failures) < FAILING_AFTER:
            return False
        self.failing_since = now
        self.probe_at = now + PROBE_S
        self.probes = 0
        return True

    def worked(self) -> bool:
        """A checkout went through, or a probe was answered; True when it was failing."""
        was = self.failing
        self.failures.clear()
        self.failing_since = self.probe_at = None
        self.probes = 0
        return was

    def probe_failed(self, now: float) -> None:
        self.probes += 1
        self.probe_at = now + min(PROBE_MAX_S, PROBE_S * 2**self.probes)

    def probe_due(self, now: float) -> bool:
        return self.probe_at is not None and now >= self.probe_at
