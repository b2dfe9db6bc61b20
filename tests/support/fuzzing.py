"""What the long fuzz runs share: how many examples (``make fuzz`` raises them through the
environment), and a demo node in a child process with rate limits out of the fuzzer's way."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import httpx

from support.client import bearer
from support.nodes import NodeProcess
from support.waits import bound

SHOP = "https://shop.example"

# Each bucket far above what a fuzzer sends a minute: a 429 is a documented answer, but one
# that would stop the run from reaching anything else. The limits have tests of their own.
RATE_LIMITS = "\n".join(
    f'"{bucket}" = {{count = 1000000, period_s = 60}}'
    for bucket in ("status:ip", "status:key", "checkout:ip", "checkout:key", "public:ip", "manage")
)


def examples(default: int) -> int:
    return int(os.environ.get("EDGE_FUZZ_EXAMPLES", default))


def runs(default: int) -> int:
    return int(os.environ.get("EDGE_FUZZ_RUNS", default))


def demo_node(where: Path) -> tuple[NodeProcess, str]:
    """``edge serve --demo`` (Stripe on its simulator, pay by mail, products ``book`` and
    ``pro-monthly``) whose project also allows ``SHOP``; the node and the project's id."""
    config = where / "edge.toml"
    config.write_text(f"[rate_limits]\n{RATE_LIMITS}\n")
    data = where / "data"
    node = NodeProcess(data, env={"EDGE_CONFIG": str(config)}, args=("--demo",)).start()
    try:
        deadline = time.monotonic() + bound(20)
        while not (data / "demo.json").exists():  # the node serves before the demo is wired
            assert time.monotonic() < deadline, node.log.read_text()
            time.sleep(0.05)
        project_id = json.loads((data / "demo.json").read_text())["projectId"]
        with httpx.Client(base_url=node.url, headers=bearer(node.admin_token)) as http:
            answer = http.patch(
                f"/api/manage/projects/{project_id}",
                json={
                    "successUrl": f"{SHOP}/thanks",
                    "cancelUrl": f"{SHOP}/cart",
                    "allowedOrigins": [SHOP],
                },
            )
            answer.raise_for_status()
    except BaseException:
        node.terminate()  # never left running for the next test to trip over
        raise
    return node, project_id
