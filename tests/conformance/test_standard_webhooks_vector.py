"""The Standard Webhooks test vector kept in tests/domain is the published one
(``standard_webhooks/test_vector.json`` in the provider data)."""

from __future__ import annotations

import json

from support.standard_webhooks_vector import VECTOR


def test_the_vector_kept_in_the_domain_tests_is_the_published_one(provider_data):
    published = json.loads((provider_data / "standard_webhooks" / "test_vector.json").read_text())
    assert (
        published["secret"],
        published["webhook-id"],
        published["webhook-timestamp"],
        published["payload"].encode(),
        published["webhook-signature"],
    ) == (
        VECTOR["secret"],
        VECTOR["id"],
        VECTOR["timestamp"],
        VECTOR["payload"],
        VECTOR["signature"],
    )
