"""What a project still needs before it takes real money: the overview's "Finish setting up"
checklist, and its set-up problems (a provider that refused the credentials or a checkout, or
could not be asked when they were saved). Pure: it reads the management API's answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from edge.dashboard.words import check_in_words
from edge.providers.offers import NAMES


@dataclass(frozen=True)
class Step:
    done: bool
    text: str
    page: str  # the dashboard page that does it, under /dashboard/p/{pid}/


def steps(
    project: Mapping[str, Any], endpoints: Sequence[Mapping[str, Any]], paid_once: bool
) -> list[Step]:
    """The checklist, in the order a merchant does it; all done: nothing is shown."""
    enabled = [p for p in project.get("providers") or () if p.get("enabled")]
    key_modes = {k.get("mode") for k in project.get("keys") or ()}
    live = [p for p in enabled if (p.get("availability") or {}).get("live", {}).get("offered")]
    return [
        Step(bool(project.get("products")), "Add a product with its price.", "products"),
        Step(bool(enabled), "Turn on a payment method (cards first).", "methods"),
        Step(bool(key_modes), "Create a project key for your backend.", "keys"),
        Step(paid_once, "Put the button on your page and take a test payment.", "button"),
        Step(bool(endpoints), "Add a notification endpoint for your backend.", "endpoints"),
        Step(bool(live) and "live" in key_modes, "Add live credentials and a live key.", "methods"),
    ]


def problems(project: Mapping[str, Any]) -> list[str]:
    """One sentence per enabled provider mode whose credentials a provider refused (on save
    or at a checkout) or could not be asked about."""
    said = []
    for view in project.get("providers") or ():
        if not view.get("enabled"):
            continue
        name = NAMES.get(view["provider"], view["provider"])
        for mode, check in sorted((view.get("checks") or {}).items()):
            if check.get("result") in ("refused", "unchecked"):
                said.append(f"{mode.capitalize()}: {check_in_words(name, check)}")
    return said
