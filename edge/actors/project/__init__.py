"""The project actor and, beside it, one module per concern.

::

    actor.py        ProjectActor: dispatch table, rate charge, the registry's Actor protocol
    ledger.py       Ledger: the state every concern shares (records, index, configuration),
                    the writes, commits and read-your-writes replies
    checkout.py     opening a checkout: pending transaction, then the provider call
    intake.py       webhook deliveries: verification off the actor, refused ones kept
    applying.py     an event applied, in one walk, however it came (a delivery, a follow-up's
                    answer, asking, a checkout's answer): dedup, match, money check, fold,
                    store, count
    event_records.py  what an event says of its transaction and what is kept of it (pure)
    story.py        the transaction's story: its steps, folded (edge.domain.convergence)
    idempotency.py  Idempotency-Key on checkout
    polls.py        status reads and long polls
    quota.py        the monthly event quota and the usage answer
    merchant.py     mark paid, cancel, billing portal, trigger material
    settings.py     the project, its products, providers and keys
    public_info.py  the providers a buyer may choose, rendered once per configuration
    retention.py    pruning the event feed after 90 days

The concern modules talk to the ledger's public methods only.
"""

from edge.actors.project.actor import ProjectActor
from edge.actors.project.public_info import PublicInfo

__all__ = ["ProjectActor", "PublicInfo"]
