"""A follow-up committed with its event survives a SIGKILL before its attempt, and is carried out
exactly once after the restart, with the attempt recorded."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

from support.waits import bound

CHILD = Path(__file__).parents[1] / "support" / "outbox_child.py"


def test_a_follow_up_owed_at_a_sigkill_is_carried_out_once_after_the_restart(tmp_path):
    data, ledger = tmp_path / "store", tmp_path / "provider-ledger.txt"
    owing = subprocess.Popen(
        [sys.executable, str(CHILD), "commit", str(data), str(ledger)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert owing.stdout is not None
        said, entry_id = owing.stdout.readline().split()
        assert said == "committed"
    finally:
        owing.send_signal(signal.SIGKILL)  # between the commit and the attempt
        owing.wait(timeout=bound(10))
        if owing.stdout is not None:
            owing.stdout.close()
    assert owing.returncode == -signal.SIGKILL
    assert not ledger.exists()  # nothing reached the provider before the kill

    resumed = subprocess.run(
        [sys.executable, str(CHILD), "resume", str(data), str(ledger)],
        capture_output=True,
        text=True,
        timeout=bound(60),
        check=True,
    )
    (settled,) = json.loads(resumed.stdout)
    assert settled["entry"]["id"] == entry_id
    assert (settled["entry"]["state"], settled["entry"]["attempts"]) == ("done", 1)
    assert [a["outcome"] for a in settled["attempts"]] == ["done"]
    assert ledger.read_text().splitlines() == ["capture tx_01JD0000000000000000000001"]
