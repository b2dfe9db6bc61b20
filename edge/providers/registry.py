"""The one place a provider's adapter is registered: everything in the node (the actors, the
follow-up worker, the HTTP routes, the API reference) iterates ``PROVIDERS`` or looks a name up
in it, in this order.

Adding a provider: its package under ``edge/providers/`` and one line below; its simulator
package under ``edge/sim/`` and one line in ``edge.sim.registry``. Nothing here imports a
simulator: production never loads one unless asked to simulate.
"""

from __future__ import annotations

from edge.providers.base import Provider
from edge.providers.btcpay import BTCPAY
from edge.providers.manual import MANUAL
from edge.providers.paddle import PADDLE
from edge.providers.paypal import PAYPAL
from edge.providers.stripe import STRIPE

# The adapters, by the name used in paths (CONTRACT 4.2).
PROVIDERS: dict[str, Provider] = {
    p.name: p
    for p in (
        STRIPE,
        PAYPAL,
        PADDLE,
        BTCPAY,
        MANUAL,
    )
}
