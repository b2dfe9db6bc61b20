"""A flood of logins and sign-ups against a real node process (docs/operations.md, "Password
hashing"): its memory stays within the stated bound while the flood lasts and after it, the
rest is refused ``429`` with ``Retry-After``, and the node answers as usual afterwards.

The flood comes from many client addresses (``X-Forwarded-For`` through a trusted proxy), as a
botnet would, so the per-address limits do not stop it: only the hashing pool does."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import httpx
import trio
from support.nodes import NodeProcess
from support.waits import bound

PASSWORD = "a long enough password"
# docs/operations.md: a flood raises the node's resident memory by at most this much
BOUND_MIB = 80
ADDRESSES, LOGINS_EACH, SIGNUPS = 64, 5, 64
ROUNDS = 3


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


async def test_a_login_and_signup_flood_stays_within_the_memory_bound(tmp_path):
    node = NodeProcess(tmp_path / "data", env={"EDGE_TRUSTED_PROXIES": "127.0.0.1"}).start()
    assert node.proc is not None
    pid = node.proc.pid
    answers: Counter[object] = Counter()
    peak = [0.0]
    try:
        limits = httpx.Limits(max_connections=ADDRESSES * LOGINS_EACH + SIGNUPS)
        async with httpx.AsyncClient(base_url=node.url, timeout=bound(60.0), limits=limits) as http:
            made = await http.post(
                "/api/accounts", json={"email": "v@example.com", "password": PASSWORD}
            )
            assert made.status_code == 201
            resting = rss_mib(pid)

            async def send(path: str, body: dict[str, str], address: str) -> None:
                try:
                    answer = await http.post(path, json=body, headers={"X-Forwarded-For": address})
                except httpx.TransportError as exc:  # a connection cut by the node's own limits
                    answers[type(exc).__name__] += 1
                    return
                answers[answer.status_code] += 1
                if answer.status_code == 429:
                    assert int(answer.headers["retry-after"]) >= 1
                    assert answer.json()["error"]["code"] == "rate_limited"

            async def sample(done: trio.Event) -> None:
                while not done.is_set():
                    peak[0] = max(peak[0], rss_mib(pid))
                    await trio.sleep(0.01)  # the subject: memory sampled while the flood lasts

            done = trio.Event()
            async with trio.open_nursery() as sampling:
                sampling.start_soon(sample, done)
                for round_ in range(ROUNDS):
                    async with trio.open_nursery() as flood:
                        for a in range(ADDRESSES):
                            address = f"10.{round_}.{a}.1"
                            for n in range(LOGINS_EACH):
                                wrong = {"email": f"x{a}-{n}@example.com", "password": f"guess {n}"}
                                flood.start_soon(send, "/api/session", wrong, address)
                        for n in range(SIGNUPS):
                            body = {"email": f"new{round_}-{n}@example.com", "password": PASSWORD}
                            flood.start_soon(send, "/api/accounts", body, f"10.9.{round_}.{n}")
                done.set()
            after = rss_mib(pid)
            right = await http.post(
                "/api/session", json={"email": "v@example.com", "password": PASSWORD}
            )
    finally:
        node.terminate()

    assert peak[0] - resting <= BOUND_MIB, (resting, peak[0], answers)
    assert after - resting <= BOUND_MIB, (resting, after)
    assert answers[429] > 0, answers  # the pool refused what it could not take
    assert answers[401] + answers[201] > 0, answers  # and hashed what it could
    assert answers[500] == 0, answers
    assert right.status_code == 200
