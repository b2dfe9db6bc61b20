"""Every way ``edge serve`` can fail to start ends in one line naming the cause and the fix, a
non-zero exit and no traceback (CONTRACT 10); one node at a time on a data dir; every file the
node writes is 0600 in 0700 directories (CONTRACT 4.6)."""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.nodes import NodeProcess
from support.waits import bound

NOBODY = 65534
# root passes every permission check: without these powers it meets them as any user does
SETPRIV = shutil.which("setpriv")
POWERLESS = [SETPRIV or "setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner", "--"]
AS_ROOT = os.geteuid() == 0


def serve(data: Path, *args: str, env: dict[str, str] | None = None, powerless: bool = False):
    command = [sys.executable, "-m", "edge", "serve", "--port", "0", "--data", str(data), *args]
    return subprocess.run(
        [*POWERLESS, *command] if powerless and AS_ROOT else command,
        capture_output=True,
        text=True,
        timeout=bound(30),
        env={**os.environ, **(env or {})},
        cwd=Path(__file__).resolve().parents[2],
    )


def one_line(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("edge: "), result.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])
    return lines[0]


@pytest.fixture
def open_tmp() -> Iterator[Path]:
    """A directory every user may enter (pytest's own are the runner's only)."""
    made = Path(tempfile.mkdtemp(prefix="edge-startup-"))
    made.chmod(0o755)
    yield made
    shutil.rmtree(made, ignore_errors=True)


def test_a_port_out_of_range(tmp_path):
    one_line(serve(tmp_path / "data", "--port", "99999"), "--port 99999", "1 to 65535")


@pytest.mark.parametrize(
    "text,words",
    [
        ("map_size = [", ["not valid TOML", "fix the file"]),
        ('map_size = "big"', ["map_size must be a whole number", "fix the file"]),
        ("max_conections = 5", ["unknown setting", "max_conections"]),
        ("body_grace_s = -1", ["body_grace_s must be a number above 0"]),
        ("[tiers.gold]\nlive_events = 5", ["lacks", "test_events"]),
        ('[rate_limits]\n"status:ip" = { count = 0, period_s = 60 }', ["count >= 1"]),
        ("trusted_proxies = ['not an address']", ["trusted_proxies", "not an address"]),
    ],
)
def test_a_bad_configuration_file(tmp_path, text, words):
    config = tmp_path / "edge.toml"
    config.write_text(text + "\n")
    line = one_line(serve(tmp_path / "data", env={"EDGE_CONFIG": str(config)}), *words)
    assert str(config) in line or "EDGE_CONFIG" in line


@pytest.mark.parametrize(
    "env,words",
    [
        ({"EDGE_STORE": "mysql://edge@db/edge"}, ["EDGE_STORE must be a postgresql:// URL"]),
        ({"EDGE_LEASE_S": "0"}, ["EDGE_LEASE_S"]),
        (
            {"EDGE_SIGNING_KEY": "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n"},
            ["EDGE_SIGNING_KEY does not hold a P-256 private key", "cat signing-key.pem"],
        ),
    ],
)
def test_a_bad_cluster_setting(tmp_path, env, words):
    line = one_line(serve(tmp_path / "data", env=env), *words)
    assert "bm90IGEga2V5" not in line  # a key given is a secret: never shown


def test_a_configuration_file_that_is_not_there(tmp_path):
    missing = tmp_path / "nope.toml"
    one_line(serve(tmp_path / "data", env={"EDGE_CONFIG": str(missing)}), str(missing), "unset")


def test_a_data_dir_that_cannot_be_a_directory(tmp_path):
    (tmp_path / "file").write_text("")
    one_line(serve(tmp_path / "file" / "data"), "cannot use the data dir", "--data")


@pytest.mark.skipif(not AS_ROOT or SETPRIV is None, reason="needs root (and setpriv) to chown")
def test_a_data_dir_owned_by_another_user(open_tmp):
    """A data dir, and a store in the node's own data dir, that another user owns."""
    theirs = open_tmp / "theirs"
    theirs.mkdir(mode=0o700)
    os.chown(theirs, NOBODY, NOBODY)
    line = one_line(serve(theirs, powerless=True), "cannot use the data dir", "not permitted")
    assert "run the node as the user who owns it" in line

    mine = open_tmp / "mine"
    (mine / "store").mkdir(parents=True, mode=0o700)
    os.chown(mine / "store", NOBODY, NOBODY)
    one_line(serve(mine, powerless=True), "cannot use the data dir", f"{mine / 'store'}")


@pytest.mark.skipif(AS_ROOT and SETPRIV is None, reason="root without setpriv passes every check")
def test_a_data_dir_that_cannot_be_made(open_tmp):
    locked = open_tmp / "read-only"
    locked.mkdir(mode=0o500)
    one_line(serve(locked / "data", powerless=True), "cannot use the data dir", "Permission denied")


def test_a_second_node_on_the_same_data_dir_refuses_in_one_line(tmp_path):
    first = NodeProcess(tmp_path / "data").start()
    try:
        assert first.proc is not None
        second = serve(tmp_path / "data")
        one_line(second, f"pid {first.proc.pid}", "another node", "--data")
        assert first.proc.poll() is None  # the first goes on
    finally:
        first.terminate()
    again = NodeProcess(tmp_path / "data").start()  # the lock went with the first node
    again.terminate()


def test_every_file_the_node_writes_is_private(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "node.json").write_text("{}")  # left by an older node, readable by all
    (data / "node.json").chmod(0o644)
    node = NodeProcess(data, args=("--demo",)).start()
    try:
        assert (data / "node.json").exists()
        found = {}
        for path in [data, *data.rglob("*")]:
            found[path.relative_to(data)] = stat.S_IMODE(path.stat().st_mode)
    finally:
        node.terminate()
    assert {"node.json", "node.lock", "admin-token", "secret.key", "signing-key.pem"} <= {
        str(p) for p in found
    }
    wrong = {
        str(path): oct(mode)
        for path, mode in found.items()
        if mode != (0o700 if (data / path).is_dir() else 0o600)
    }
    assert wrong == {}
