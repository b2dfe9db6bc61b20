"""The project actor and, beside it, one module per concern.

::

    actor.py        ProjectActor: dispatch table, rate charge, the registry's Actor protocol
    ledger.py       Ledger: the state every concern shares (records, index, configuration),
                    the writes, commits and read-your-writes replies
    checkout.py     opening a checkout: pending transaction, then the provider call
    intake.py       webhooks: verification off the actor, then dedup, match, apply
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
