"""The labels buyers see for a project's payment methods (CONTRACT 4.1), and the icon of each
kind of payment.

A label is the merchant's (per project, or per product) or the provider's default. Two
providers of one kind share a default ("Card" for Stripe and for Paddle), and a buyer shown two
identical rows cannot tell them apart; so a default that repeats a label shown above it is
told apart by its provider's name ("Card", then "Card (Paddle)"). A label the merchant chose
is theirs, and is shown as chosen.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

# A method's icon is the kind of payment a buyer makes, whoever the provider: a card (a hosted
# page or a card form), a wallet, crypto, a payment by mail (files under /static/icons/).
ICONS = {
    "card": "card.svg",
    "form": "card.svg",
    "wallet": "wallet.svg",
    "crypto": "bitcoin.svg",
    "manual": "mail.svg",
}


@dataclass(frozen=True)
class Label:
    text: str
    is_default: bool  # the provider's default, not one the merchant chose
    provider_name: str  # how a buyer knows the provider: "Paddle"


def distinct(labels: Sequence[Label]) -> list[str]:
    """The texts to show, in the given (display) order."""
    shown: list[str] = []
    seen: set[str] = set()
    for label in labels:
        text = label.text
        if label.is_default and text.casefold() in seen:
            text = f"{text} ({label.provider_name})"
        seen.add(text.casefold())
        shown.append(text)
    return shown
