"""A delivery is checked against the project's secrets as they are now: the keys an actor
hands out for verification are opened once per configuration, and a changed secret or a
provider turned off is seen by the very next delivery."""

from __future__ import annotations

from functools import partial

from support.client import shop_or_new, simulated
from support.stripe_events import event_body, signed, stripe_object
from support.stripe_shop import SECRET_KEY

from edge.sim.stripe.registration import credentials

NEW_SECRET = "whsec_rotated0123456789abcdefghijklmn"


async def _post(http, project_id: str, event_id: str, secret: str):
    body = event_body(event_id, "checkout.session.completed", stripe_object("checkout_session"))
    return await http.post(
        f"/webhook/stripe/{project_id}", content=body, headers=signed(body, secret)
    )


async def test_a_changed_secret_and_a_provider_turned_off_hold_from_the_next_delivery(
    node, admin, http, sim
):
    shop = await shop_or_new(admin, None)
    pid = shop.project_id
    test = await simulated(admin, "stripe", pid, partial(credentials, sim, secret_key=SECRET_KEY))
    old = test["webhookSecret"]
    assert (await _post(http, pid, "evt_before_change", old)).status_code == 200

    await admin.provider(
        pid, "stripe", {"enabled": True, "order": 1, "test": {**test, "webhookSecret": NEW_SECRET}}
    )
    refused = await _post(http, pid, "evt_old_secret", old)
    assert refused.status_code == 401, refused.text
    assert refused.json()["error"]["code"] == "signature_invalid"
    assert (await _post(http, pid, "evt_new_secret", NEW_SECRET)).status_code == 200

    await admin.provider(pid, "stripe", {"enabled": False})
    off = await _post(http, pid, "evt_turned_off", NEW_SECRET)
    assert off.status_code == 404, off.text
    assert off.json()["error"]["code"] == "provider_not_enabled"
    # kept with the refusals, where the merchant looks when every payment stays pending
    kept = await admin.ok("GET", f"/api/manage/projects/{pid}/deliveries")
    assert [(d["provider"], d["code"]) for d in kept["items"][:2]] == [
        ("stripe", "provider_not_enabled"),
        ("stripe", "signature_invalid"),
    ]
