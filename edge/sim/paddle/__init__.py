"""A loopback Paddle Billing simulator speaking Paddle's wire format (transactions with
non-catalog prices, customer portal sessions, notifications signed with ``Paddle-Signature``)."""

from edge.sim.paddle.events import SUPPORTED_TRIGGERS, event_for_trigger
from edge.sim.paddle.server import PaddleSimulator

__all__ = ["SUPPORTED_TRIGGERS", "PaddleSimulator", "event_for_trigger"]
