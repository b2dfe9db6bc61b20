"""Checks against the providers' own published data and official SDKs.

The only tests allowed to read outside the repository: the providers' published data lives in
``../shared/provider-data`` (beside the repository; its README says where each file comes
from). Tests that need it take the ``provider_data`` fixture, which skips them with a one-line
reason when the directory is absent, or fails them when ``EDGE_REQUIRE_CONFORMANCE=1`` (CI sets
it, so a missing directory cannot pass unnoticed). Checks against an SDK installed by the test
extra (``stripe``) need nothing outside and always run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

PROVIDER_DATA = Path(__file__).resolve().parents[2].parent / "shared" / "provider-data"
REQUIRE_ENV = "EDGE_REQUIRE_CONFORMANCE"


def provider_data_dir(path: Path, env: Mapping[str, str]) -> Path:
    """``path`` if it is a directory; otherwise skip the test, or fail it when ``env`` sets
    ``EDGE_REQUIRE_CONFORMANCE=1``."""
    if path.is_dir():
        return path
    reason = f"no provider data at {path} (the conformance checks need ../shared/provider-data)"
    if env.get(REQUIRE_ENV) == "1":
        pytest.fail(f"{reason}; {REQUIRE_ENV}=1 requires it", pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def provider_data() -> Path:
    return provider_data_dir(PROVIDER_DATA, os.environ)


@pytest.fixture(scope="session")
def stripe_fixtures3(provider_data: Path) -> dict[str, Any]:
    """Stripe's example API objects by kind (stripe/openapi ``fixtures3.json``)."""
    resources: dict[str, Any] = json.loads(
        (provider_data / "stripe" / "fixtures3.json").read_text("utf-8")
    )["resources"]
    return resources
