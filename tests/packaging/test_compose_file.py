"""deploy/compose.yaml runs the image the Containerfile makes as it expects to be run: its
port, its data volume, on the host's loopback only (a TLS proxy in front), with a public https
address."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def test_the_compose_file_matches_the_image():
    compose = yaml.safe_load((ROOT / "deploy" / "compose.yaml").read_text())
    image = (ROOT / "Containerfile").read_text()
    service = compose["services"]["edge"]
    exposed = re.search(r"^EXPOSE (\d+)$", image, re.MULTILINE)
    volume = re.search(r"^VOLUME (\S+)$", image, re.MULTILINE)
    assert exposed and volume
    (port,) = service["ports"]
    assert port == f"127.0.0.1:{exposed.group(1)}:{exposed.group(1)}"  # loopback only
    assert f"edge-data:{volume.group(1)}" in service["volumes"]
    assert service["environment"]["EDGE_PUBLIC_URL"].startswith("https://")
    assert "edge-data" in compose["volumes"]
