"""Browser fixtures: a real node (the shared ``node`` fixture) and a merchant's page beside it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from browser.harness import ShopSite, require_browser

from edge.http import button
from edge.node import RunningNode


@pytest.fixture
def shop_site(node: RunningNode) -> Iterator[ShopSite]:
    require_browser()
    with ShopSite(node.url, button.sri_hash(node.ctx.signer)) as site:
        yield site
