"""Delivery orders for convergence tests (CONTRACT 2)."""

from __future__ import annotations

import itertools
import random


def delivery_orders(count: int, rng: random.Random, samples: int) -> list[list[int]]:
    """Every permutation of up to four deliveries, else a sample; each with some deliveries
    repeated (a provider's retry) at random places."""
    if count <= 4:
        orders = [list(p) for p in itertools.permutations(range(count))]
    else:
        orders = [rng.sample(range(count), count) for _ in range(samples)]
    for order in orders:
        for _ in range(rng.randrange(3)):
            order.insert(rng.randrange(len(order) + 1), rng.randrange(count))
    return orders
