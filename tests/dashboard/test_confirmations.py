"""Money moves and what cannot be undone never happen on one click: the dashboard answers such
a form with a page that asks (the same form again, with ``confirmed``), and changes nothing
until it is confirmed. A new key is shown by the page after the POST (post/redirect/get), once."""

from __future__ import annotations

import re

from dashboard.test_pages import new_project, signed_in


async def test_revoke_delete_and_remove_ask_first(node):
    async with signed_in(node.url, "careful@example.com") as (client, csrf):
        pid = await new_project(client, csrf)
        api = {"Cm-Csrf": csrf}
        product = {"name": "Ten", "kind": "payment", "amount": 10, "currency": "EUR"}
        await client.put(f"/api/manage/projects/{pid}/products/ten", json=product, headers=api)
        made = await client.post(
            f"/dashboard/p/{pid}/keys", data={"csrf": csrf, "mode": "test", "name": "backend"}
        )
        assert made.status_code == 303
        shown = await client.get(made.headers["location"])
        key = re.search(r'<code id="new-key">(cmk_test_\w+)</code>', shown.text)
        assert key, shown.text
        again = await client.get(made.headers["location"])  # a reload: not shown, none made
        assert "new-key" not in again.text
        (listed,) = (await client.get(f"/api/manage/projects/{pid}/keys")).json()["items"]
        endpoint = await client.post(
            f"/api/manage/projects/{pid}/endpoints",
            json={"url": "https://shop.example/hooks", "mode": "test"},
            headers=api,
        )
        assert endpoint.status_code == 201, endpoint.text
        actions = [
            (f"keys/{listed['keyId']}/revoke", "Revoke this key?"),
            ("products/ten/delete", "Delete this product?"),
            (
                f"endpoints/{endpoint.json()['endpointId']}/remove",
                "Remove this notification endpoint?",
            ),
        ]
        before = (await client.get(f"/api/manage/projects/{pid}")).json()
        endpoints = (await client.get(f"/api/manage/projects/{pid}/endpoints")).json()
        for path, question in actions:
            asked = await client.post(f"/dashboard/p/{pid}/{path}", data={"csrf": csrf})
            assert asked.status_code == 200 and question in asked.text, (path, asked.text[-600:])
            assert 'name="confirmed" value="yes"' in asked.text
        assert (await client.get(f"/api/manage/projects/{pid}")).json()["keys"] == before["keys"]
        assert (await client.get(f"/api/manage/projects/{pid}")).json()["products"]
        assert (await client.get(f"/api/manage/projects/{pid}/endpoints")).json() == endpoints
        for path, _ in actions:
            done = await client.post(
                f"/dashboard/p/{pid}/{path}", data={"csrf": csrf, "confirmed": "yes"}
            )
            assert done.status_code == 303, done.text
        after = (await client.get(f"/api/manage/projects/{pid}")).json()
        assert after["keys"] == [] and after["products"] == []
        assert (await client.get(f"/api/manage/projects/{pid}/endpoints")).json()["items"] == []
