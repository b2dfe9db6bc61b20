"""``make bench-instructions``: the instructions a fresh webhook costs the node, for one or more
revisions of this repository, counted by valgrind's callgrind (``Ir``).

CPU time on a shared or virtual machine moves by 10 to 20 % from one minute to the next, so a
change worth 5 % is lost in paired runs of wall-clock CPU. An instruction count barely moves:
it leaves out the kernel's part of a request (the socket calls, the disk) and what a cache miss
costs, so it judges the node's own work, which is what a change to the hot path changes.

For each revision: a git worktree of it, the node started under ``valgrind --tool=callgrind
--instr-atstart=no`` (an LMDB map of 1 GiB: valgrind cannot reserve the node's default), the
bench's Stripe shop, a warm-up, then counting switched on for ``--events`` deliveries of the
``make bench-peers`` workload (``checkout.session.completed`` for the shop's orders, fresh event
ids, a tenth redelivered) sent on 16 connections, and off again. Revisions are measured in
turn, ``--rounds`` times. Counts still move a little (about 2 %) between runs: how many
events share a commit depends on timing. Under valgrind the CPU's SHA extensions are not used,
so OpenSSL's part (the HMAC and the body's digest) counts several times its real cost; it is
the same on both sides.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path

from bench import loadgen, shop
from bench.peers import workload
from bench.servers import Server, worktree

WARM_UP = 400
CONNECTIONS = 16
ORDERS = 100
MAP_SIZE = 2**30


def count(tree: Path, work: Path, events: int, seed: int) -> float:
    """Instructions a delivery for the node in ``tree``, over ``events`` deliveries."""
    config = shop.write_config(work / "edge.toml")
    config.write_text(f"map_size = {MAP_SIZE}\n" + config.read_text())
    out = work / "callgrind.out"
    node = Server.node(work / "node", work / "node.log", {"EDGE_CONFIG": str(config)})
    node.run_tree(tree)
    node.argv[0:0] = [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        f"--callgrind-out-file={out}",
    ]
    node.start(timeout_s=600)
    try:
        with shop.Admin(node.url, work / "node") as admin:
            bench_shop = shop.stripe_shop(admin, ORDERS)

        def requests(n: int, pool_seed: int) -> list[bytes]:
            pool = workload.webhook_pool(work / f"pool-{pool_seed}.txt", bench_shop, n, pool_seed)
            return loadgen.read_requests(node.url, pool.path)

        warm, measured = requests(WARM_UP, seed), requests(events, seed + 1)
        _send(node.url, warm)
        _callgrind("-i", "on", node.pid)
        _send(node.url, measured)
        _callgrind("-i", "off", node.pid)
        _callgrind("-d", None, node.pid)
    finally:
        node.stop(timeout_s=120)
    return _total(out) / events


def _send(url: str, requests: list[bytes]) -> None:
    answers = asyncio.run(loadgen.each_once(url, requests, CONNECTIONS))
    statuses = {status for status, _ in answers}
    if statuses != {200}:
        raise RuntimeError(f"deliveries answered {sorted(statuses)}, not all 200")


def _callgrind(option: str, value: str | None, pid: int) -> None:
    argv = ["callgrind_control", option, *([value] if value else []), str(pid)]
    subprocess.run(argv, check=True, capture_output=True)


def _total(out: Path) -> int:
    """The most any dump of the run counted (the dump taken while counting was on)."""
    total = 0
    for dump in out.parent.glob(out.name + "*"):
        for line in dump.read_text(errors="replace").splitlines():
            if line.startswith(("summary:", "totals:")):
                total = max(total, int(line.split()[1]))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.instructions", description=__doc__)
    parser.add_argument("revisions", nargs="*", default=["HEAD"], help="git revisions to count")
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    for tool in ("valgrind", "callgrind_control"):
        if subprocess.run(["which", tool], capture_output=True).returncode:
            sys.exit(f"{tool} is not installed (make bench-instructions installs it: apt-get)")
    counts: dict[str, list[float]] = {revision: [] for revision in args.revisions}
    with tempfile.TemporaryDirectory(prefix="edge-instructions-") as temp, ExitStack() as trees:
        tree_of = {
            revision: trees.enter_context(worktree(revision, Path(temp) / f"tree-{n}"))
            for n, revision in enumerate(args.revisions)
        }
        for round_ in range(args.rounds):
            for revision, tree in tree_of.items():
                work = Path(tempfile.mkdtemp(prefix="run-", dir=temp))
                per_event = count(tree, work, args.events, seed=round_ * 2)
                counts[revision].append(per_event)
                print(f"{revision}: {per_event / 1e6:.3f} M instructions a delivery", flush=True)
    first = statistics.median(counts[args.revisions[0]])
    for revision, figures in counts.items():
        median = statistics.median(figures)
        print(f"{revision:>20}  {median / 1e6:.3f} M a delivery, {median / first:.3f} of the first")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
