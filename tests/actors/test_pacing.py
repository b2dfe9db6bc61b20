"""How fast the node asks a provider account (edge.actors.pacing): at most its rate, none while
the provider said to wait, and an account named without its secrets."""

from __future__ import annotations

import trio

from edge.actors.pacing import ProviderPacing, account_of


async def test_an_account_is_asked_at_most_at_its_rate(autojump_clock):
    pacing = ProviderPacing(rate_per_s=5)
    taken: list[float] = []
    for _ in range(50):
        await pacing.slot("stripe:a")
        taken.append(trio.current_time())
    # a burst of 5 at once, then one every 0.2 s: never more than 5 + 5 a second so far
    start = taken[0]
    for n, at in enumerate(taken, start=1):
        assert n <= 5 + 5 * (at - start) + 1e-6, (n, at - start)
    assert taken[-1] - start >= (50 - 5) / 5 - 1e-6
    # another account has its own budget
    before = trio.current_time()
    await pacing.slot("stripe:b")
    assert trio.current_time() == before


async def test_nothing_while_the_provider_said_to_wait(autojump_clock):
    pacing = ProviderPacing(rate_per_s=5)
    pacing.told_to_wait("paddle:a", 60)
    assert 59.9 < pacing.free_in("paddle:a") <= 60
    start = trio.current_time()
    await pacing.slot("paddle:a")
    assert trio.current_time() - start >= 60
    assert pacing.free_in("paddle:a") == 0


def test_free_in_takes_nothing():
    now = [0.0]
    pacing = ProviderPacing(rate_per_s=1, clock_s=lambda: now[0])
    assert pacing.free_in("x") == 0
    assert pacing.free_in("x") == 0  # looking twice takes no slot


def test_an_account_is_its_credentials_never_shown():
    secret = "sk_test_0123456789abcdef"
    one = account_of("stripe", "test", {"secretKey": secret}, ["secretKey"])
    assert one == account_of("stripe", "test", {"secretKey": secret, "x": 1}, ["secretKey"])
    assert one != account_of("stripe", "live", {"secretKey": secret}, ["secretKey"])
    assert one != account_of("stripe", "test", {"secretKey": secret + "x"}, ["secretKey"])
    assert secret not in one and one.startswith("stripe:")
