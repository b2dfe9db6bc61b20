"""``make bench-layers``: what each layer of a webhook's path costs in CPU, kernel included.

A profile gives shares of the loop's time, with the profiler's own cost spread over every call;
this gives seconds. A git worktree of ``--revision`` (HEAD by default) is patched so that, with
``EDGE_BENCH_CUT`` set, the node answers a canned ``200`` at one point of the path and does
nothing after it; each cut then runs at peak on the ``make bench-peers`` workload (Stripe-signed
``checkout.session.completed`` for the shop's orders, fresh ids, a tenth redelivered; ``wrk
-c64`` on the load CPU, the node on the server CPU), and the CPU the node's process spent is
read from ``/proc``. Cuts are measured in turn, ``--rounds`` times, so a noisy minute touches
all of them; the table gives each cut's median and what the layer before it adds.

A patch that no longer finds its place in the source fails the run: the cut points name the
code they cut, so they are updated with it.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bench import shop, wrk
from bench.cluster import cpu_seconds
from bench.peers import workload
from bench.servers import Server, pin_load_cpu, worktree

ORDERS = 500
WARM_UP = 3000
CANNED = b'{"received":true}'
_CANNED_HTTP = (
    b"HTTP/1.1 200 \r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s"
    % (len(CANNED), CANNED)
)
_ENV = "import os as _os\n_CUT = _os.environ.get('EDGE_BENCH_CUT', '')\n"


@dataclass(frozen=True)
class Cut:
    name: str
    says: str  # where the delivery is answered
    path: str  # the module patched
    before: str  # the source the cut goes in front of (found exactly once)
    code: str  # what answers there, indented as ``before``


CUTS = (
    Cut(
        "read",
        "on its first read, before the request is parsed",
        "edge/serving.py",
        "            if data and self._asgi is not None and self._between_requests():",
        "            if _CUT == 'read' and data[:14] == b'POST /webhook/':\n"
        f"                await self.stream.send_all({_CANNED_HTTP!r})\n"
        "                continue\n",
    ),
    Cut(
        "parsed",
        "once the fast lane has parsed it",
        "edge/serving.py",
        "        inner = self.protocol.protocol\n        assert isinstance(inner, H11Protocol)\n"
        "        self._turn(idle=False)",
        "        if _CUT == 'parsed' and request.path.startswith(b'/webhook/'):\n"
        f"            await self.stream.send_all({_CANNED_HTTP!r})\n"
        "            return True\n",
    ),
    Cut(
        "route",
        "by the webhook route, its body read (ASGI scope, middleware, router, route, answer)",
        "edge/http/webhooks.py",
        "        delivery = Webhook(provider, headers, body",
        f"        if _CUT == 'route':\n            await answer(send, 200, {CANNED!r})\n"
        "            return\n",
    ),
    Cut(
        "verified",
        "by the actor, its signature checked (registry, rate bucket, keys, HMAC)",
        "edge/actors/project/intake.py",
        "            await self.verified(m.WebhookVerified(msg.provider, mode, msg.body), reply)",
        "            if _CUT == 'verified':\n                reply({'received': True})\n"
        "                return\n",
    ),
    Cut(
        "normalized",
        "once the provider's event is read and normalized",
        "edge/actors/project/intake.py",
        "            ops: list[Op] = []\n            answer, outcome = await self.applier.take(",
        "            if _CUT == 'normalized':\n                reply({'received': True})\n"
        "                return\n",
    ),
    Cut(
        "applied",
        "once it is stored and applied, but before the commit",
        "edge/actors/project/intake.py",
        "        if ops:\n            self.ledger.commit(ops, reply, answer)",
        "        if ops and _CUT == 'applied':\n            reply(answer)\n            return\n",
    ),
    Cut("", "after the commit, as in production", "", "", ""),
)


def patch(tree: Path) -> None:
    """Put every cut into ``tree``'s source, each behind ``EDGE_BENCH_CUT``."""
    touched: dict[Path, str] = {}
    for cut in CUTS:
        if not cut.path:
            continue
        path = tree / cut.path
        text = touched.get(path) or path.read_text()
        if text.count(cut.before) != 1:
            raise SystemExit(f"cut {cut.name!r}: its place in {cut.path} is gone; update it")
        touched[path] = text.replace(cut.before, cut.code + cut.before)
    for path, text in touched.items():
        head, sep, rest = text.partition("\nfrom __future__ import annotations\n")
        path.write_text(head + sep + _ENV + rest if sep else _ENV + text)


def measure(tree: Path, work: Path, cut: Cut, seconds: float, seed: int) -> float:
    """CPU milliseconds a delivery of the node in ``tree`` answering at ``cut``."""
    config = shop.write_config(work / "edge.toml")
    env = {"EDGE_CONFIG": str(config), "EDGE_BENCH_CUT": cut.name}
    node = Server.node(work / "node", work / "node.log", env)
    node.run_tree(tree)
    node.start(timeout_s=120)
    try:
        with shop.Admin(node.url, work / "node") as admin:
            bench_shop = shop.stripe_shop(admin, ORDERS)
        warm = workload.webhook_pool(work / "warm.txt", bench_shop, WARM_UP, seed + 1000)
        wrk.run(node.url, pool=warm.path, script=wrk.REQUESTS_LUA, duration_s=2)
        # enough for the full path's peak; the cuts before the store do not mind repeats
        pool = workload.webhook_pool(work / "pool.txt", bench_shop, round(3500 * seconds), seed)
        before = cpu_seconds([node.pid])
        result = wrk.run(node.url, pool=pool.path, script=wrk.REQUESTS_LUA, duration_s=seconds)
        spent = cpu_seconds([node.pid]) - before
    finally:
        node.stop(timeout_s=60)
    if result.non_2xx or result.socket_errors or not result.requests:
        raise RuntimeError(f"cut {cut.name or 'none'}: {result}")
    return 1000 * spent / result.requests


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.layers", description=__doc__)
    parser.add_argument("--revision", default="HEAD")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=8.0)
    args = parser.parse_args(argv)
    pin_load_cpu()
    figures: dict[str, list[float]] = {cut.name: [] for cut in CUTS}
    with (
        tempfile.TemporaryDirectory(prefix="edge-layers-") as temp,
        worktree(args.revision, Path(temp) / "tree") as tree,
    ):
        patch(tree)
        for round_ in range(args.rounds):
            for cut in CUTS:
                work = Path(tempfile.mkdtemp(prefix="run-", dir=temp))
                ms = measure(tree, work, cut, args.seconds, seed=round_)
                figures[cut.name].append(ms)
                print(f"round {round_ + 1}: {cut.name or 'none':>10}  {ms:.3f} ms", flush=True)
    print(f"\nCPU a webhook ({sys.implementation.name} {sys.version.split()[0]}), the delivery")
    previous = None
    for cut in CUTS:
        median = statistics.median(figures[cut.name])
        spread = f"{min(figures[cut.name]):.3f} - {max(figures[cut.name]):.3f}"
        added = f"+{median - previous:.3f}" if previous is not None else ""
        print(f"  {cut.says:<88} {median:.3f} ms ({spread}) {added}")
        previous = median
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
