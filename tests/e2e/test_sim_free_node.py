"""A node that never simulates loads no simulator: the providers' registry holds adapters only,
and ``edge trigger`` reaches the simulators through the node context, which loads them on its
first use (edge.node). Checked in a child process, whose modules are its own."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import trio

CHILD = Path(__file__).parents[1] / "support" / "sim_free_child.py"


async def test_starting_and_serving_loads_no_simulator_until_a_trigger(tmp_path: Path) -> None:
    done = await trio.run_process(
        [sys.executable, str(CHILD), str(tmp_path / "data")],
        capture_stdout=True,
        capture_stderr=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    seen = json.loads(done.stdout)
    assert seen["answered"] == [201, 200, 200]  # a checkout, a verified webhook, a status
    assert seen["imported"] == seen["started"] == seen["served"] == []
    assert seen["trigger"] == [409, "not_simulated"]
    assert "edge.sim.registry" in seen["triggered"]
