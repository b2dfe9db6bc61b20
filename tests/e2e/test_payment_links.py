"""Payment links on a real node (CONTRACT 4.1): the page a merchant with no website sends a
buyer to, ``/pay/{projectId}/{productId}``, and the node's own pages a checkout ends on."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest
from support.client import Shop, bearer, manual_shop

from edge.http import button
from edge.http.middleware import HTML_CSP
from edge.node import RunningNode


class Page(HTMLParser):
    """The tags of an HTML page, with their attributes, and its text."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str]]] = []
        self.text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, {name: value or "" for name, value in attrs}))

    def handle_data(self, data: str) -> None:
        self.text.append(data)

    def all(self, tag: str) -> list[dict[str, str]]:
        return [attrs for name, attrs in self.tags if name == tag]

    def one(self, tag: str) -> dict[str, str]:
        [attrs] = self.all(tag)
        return attrs

    @property
    def words(self) -> str:
        return " ".join(" ".join(self.text).split())


async def _page(http, path: str, **params: str) -> Page:
    answer = await http.get(path, params=params)
    assert answer.status_code == 200, answer.text
    return Page(answer.text)


def _error(answer) -> tuple[int, str, str | None]:
    error = answer.json()["error"]
    return answer.status_code, error["code"], error.get("field")


async def test_the_link_shows_the_product_its_price_and_the_button(node: RunningNode, admin, http):
    shop = await manual_shop(admin)
    answer = await http.get(f"/pay/{shop.project_id}/book")
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "text/html; charset=utf-8"
    assert answer.headers["cache-control"] == "no-store"
    page = Page(answer.text)
    assert page.one("html")["lang"] == "en"
    assert "A book" in page.words and "Pay for A book" in page.words  # heading and title
    [price, label] = page.all("data")  # the price, and the button's label
    assert price == {"class": "money", "value": "19.99", "data-currency": "EUR"} == label
    assert "Pay 19.99 EUR" in page.words  # until pay.js writes it for the locale
    # the button, for this product, loaded from this node with its integrity hash
    assert page.one("cm-button") == {
        "class": "pay",
        "project": shop.project_id,
        "product": "book",
        "without": "paddle",  # its hosted card form is the shop's own page's to open
    }
    script = button.current(node.ctx.signer)
    loaded = {attrs["src"]: attrs for attrs in page.all("script")}
    assert loaded[script.path]["integrity"] == script.integrity
    assert loaded[script.path]["crossorigin"] == "anonymous"
    assert (await http.get(script.path)).content == script.body
    for name in ("pay.js", "pay.css"):
        served = await http.get(f"/static/pay/{name}")
        assert served.status_code == 200 and served.content
        assert served.headers["etag"]


async def test_the_page_runs_no_inline_script_or_style(admin, http):
    shop = await manual_shop(admin)
    answer = await http.get(f"/pay/{shop.project_id}/book", params={"customerRef": "u-1"})
    assert answer.headers["content-security-policy"] == HTML_CSP
    assert "script-src 'self';" in HTML_CSP and "unsafe-inline" not in HTML_CSP
    page = Page(answer.text)
    assert page.all("script") and all(attrs.get("src") for attrs in page.all("script"))
    assert not page.all("style")
    assert all("style" not in attrs for _, attrs in page.tags)
    assert all(not name.startswith("on") for _, attrs in page.tags for name in attrs)
    [sheet] = [attrs for attrs in page.all("link") if attrs.get("rel") == "stylesheet"]
    assert sheet["href"] == "/static/pay/pay.css"


async def test_a_quantity_shows_the_total_and_goes_to_the_button(admin, http):
    shop = await manual_shop(admin)
    page = await _page(http, f"/pay/{shop.project_id}/book", quantity="3")
    assert page.one("cm-button")["quantity"] == "3"
    values = [attrs["value"] for attrs in page.all("data")]
    assert values == ["59.97", "19.99", "59.97", "59.97"]  # total; each, total; the label
    assert "Quantity 3" in page.words and "Total" in page.words


async def test_a_subscription_says_its_interval_and_that_it_renews(admin, http):
    shop = await manual_shop(admin)
    await admin.product(
        shop.project_id, "pro-monthly", name="Pro", kind="subscription", amount=9, interval="month"
    )
    page = await _page(http, f"/pay/{shop.project_id}/pro-monthly")
    assert "9.00 EUR per month" in page.words
    assert "renews every month until you cancel it" in page.words
    assert "Subscribe" in page.words
    refused = await http.get(f"/pay/{shop.project_id}/pro-monthly", params={"quantity": "2"})
    assert _error(refused) == (409, "quantity_not_allowed", "quantity")


async def test_unknown_projects_and_products_are_the_contract_404s(admin, http):
    shop = await manual_shop(admin)
    cases = {
        f"/pay/{shop.project_id}/nothing-here": "product_not_found",
        f"/pay/{shop.project_id}/NOT%20A%20SLUG": "product_not_found",
        "/pay/prj_0000000000000000/book": "project_not_found",
        "/pay/not-a-project/book": "project_not_found",
    }
    for path, code in cases.items():
        answer = await http.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.json()["error"]["code"] == code, path
        assert answer.headers["cm-request-id"]


@pytest.mark.parametrize(
    ("params", "checkout_body"),
    [
        ({"quantity": "0"}, {"quantity": 0}),
        ({"quantity": "101"}, {"quantity": 101}),
        ({"quantity": "-1"}, {"quantity": -1}),
        ({"quantity": "1e3"}, {"quantity": "1e3"}),
        ({"quantity": "2.5"}, {"quantity": 2.5}),
        ({"quantity": "9" * 4301}, {"quantity": "9" * 4301}),
        ({"quantity": ""}, {"quantity": ""}),
        ({"mode": "sandbox"}, {"mode": "sandbox"}),
        ({"mode": ""}, {"mode": ""}),
    ],
)
async def test_bad_link_parameters_are_refused_as_the_checkout_refuses_them(
    admin, http, params, checkout_body
):
    shop = await manual_shop(admin)
    page = await http.get(f"/pay/{shop.project_id}/book", params=params)
    checkout = await http.post(
        f"/api/checkout/manual/{shop.project_id}", json={"productId": "book", **checkout_body}
    )
    assert _error(page) == _error(checkout), (page.text, checkout.text)
    assert _error(page)[:2] == (400, "invalid_request")


async def test_a_customer_ref_is_checked_as_a_metadata_value(admin, http):
    shop = await manual_shop(admin)
    long = "x" * 501
    page = await http.get(f"/pay/{shop.project_id}/book", params={"customerRef": long})
    checkout = await http.post(
        f"/api/checkout/manual/{shop.project_id}",
        json={"productId": "book", "metadata": {"customerRef": long}},
    )
    # the same refusal; the link names its own parameter
    assert _error(checkout) == (400, "invalid_request", "metadata.customerRef")
    assert _error(page) == (400, "invalid_request", "customerRef")
    fits = await _page(http, f"/pay/{shop.project_id}/book", customerRef="x" * 500)
    assert fits.one("cm-button")["customer-ref"] == "x" * 500
    ignored = await _page(http, f"/pay/{shop.project_id}/book", customerRef="", utm_source="chat")
    assert "customer-ref" not in ignored.one("cm-button")


async def test_the_customer_ref_is_carried_into_the_checkout_the_button_starts(admin, http):
    shop = await manual_shop(admin)
    ref = 'user 42 & <"friends">'
    page = await _page(http, f"/pay/{shop.project_id}/book", customerRef=ref)
    element = page.one("cm-button")
    assert element["customer-ref"] == ref  # escaped in the HTML, the same text in the DOM
    # what the button posts from its attributes (edge/static/button/cm-button.js, #choose)
    started = await http.post(
        f"/api/checkout/manual/{element['project']}",
        json={
            "productId": element["product"],
            "mode": element.get("mode", "live"),
            "metadata": {"customerRef": element["customer-ref"]},
        },
    )
    assert started.status_code == 201, started.text
    listed = await http.get(
        f"/api/projects/{shop.project_id}/transactions", headers=bearer(shop.live_key)
    )
    [tx] = listed.json()["items"]
    assert (tx["id"], tx["customerRef"]) == (started.json()["txId"], ref)


async def test_mode_test_shows_the_test_offer(admin, http):
    shop = await manual_shop(admin)
    live = await _page(http, f"/pay/{shop.project_id}/book")
    assert "mode" not in live.one("cm-button") and "Test mode" not in live.words
    test = await _page(http, f"/pay/{shop.project_id}/book", mode="test")
    assert test.one("cm-button")["mode"] == "test"
    assert "Test mode" in test.words and "no real money is charged" in test.words


async def test_the_page_speaks_the_buyer_s_language(admin, http):
    shop = await manual_shop(admin)
    path = f"/pay/{shop.project_id}/book"

    async def spoken(**headers_and_query: str) -> tuple[str, str]:
        query = {"lang": headers_and_query.pop("lang")} if "lang" in headers_and_query else {}
        answer = await http.get(path, params=query, headers=headers_and_query)
        page = Page(answer.text)
        assert answer.headers["content-language"] == page.one("html")["lang"]
        assert answer.headers["vary"] == "Accept-Language"  # a cache keeps one per language
        return page.one("html")["lang"], page.words

    lang, words = await spoken(**{"Accept-Language": "fr-CH, fr;q=0.9, en;q=0.8"})
    assert lang == "fr" and "Payer A book" in words and "l’étape suivante" in words
    lang, words = await spoken(**{"Accept-Language": "pl"})
    assert lang == "pl" and "Zapłać 19.99 EUR" in words
    lang, words = await spoken(**{"Accept-Language": "ja, de;q=0.5"})
    assert lang == "de" and "A book bezahlen" in words
    lang, _ = await spoken(**{"Accept-Language": "fr", "lang": "nl"})  # the link's own first
    assert lang == "nl"
    lang, words = await spoken(**{"Accept-Language": "ja", "lang": "xx"})
    assert lang == "en" and "Pay for A book" in words


async def test_the_link_counts_against_the_public_info_limit(admin, http):
    shop = await manual_shop(admin)
    answer = await http.get(f"/pay/{shop.project_id}/book")
    info = await http.get(
        f"/api/projects/{shop.project_id}/public-info", params={"productId": "book"}
    )
    assert answer.headers["ratelimit-limit"] == info.headers["ratelimit-limit"] == "300"
    # one bucket: the info's answer comes after the page's
    assert int(info.headers["ratelimit-remaining"]) < int(answer.headers["ratelimit-remaining"])


async def _node_pages_shop(node: RunningNode, admin) -> Shop:
    """A shop with no website: its success and cancel addresses are the node's own pages."""
    shop = await manual_shop(admin)
    pid = shop.project_id
    await admin.ok(
        "PATCH",
        f"/api/manage/projects/{pid}",
        {
            "successUrl": f"{node.url}/pay/{pid}/done/{{TX_ID}}",
            "cancelUrl": f"{node.url}/pay/{pid}/canceled/{{TX_ID}}",
        },
    )
    return shop


async def test_the_node_s_own_pages_say_how_a_checkout_ended(node: RunningNode, admin, http):
    shop = await _node_pages_shop(node, admin)
    pid = shop.project_id
    started = await http.post(f"/api/checkout/manual/{pid}", json={"productId": "book"})
    assert started.status_code == 201, started.text
    tx_id = started.json()["txId"]

    waiting = await http.get(f"/pay/{pid}/done/{tx_id}")
    assert waiting.status_code == 200 and waiting.headers["cache-control"] == "no-store"
    assert waiting.headers["ratelimit-limit"] == "60"  # a status read, charged as one
    page = Page(waiting.text)
    assert "Confirming your payment" in page.words and tx_id in page.words
    main = page.one("main")
    assert (main["data-status-url"], main["data-version"]) == (f"/status/{pid}/{tx_id}", "1")
    assert "Payment canceled" in Page((await http.get(f"/pay/{pid}/canceled/{tx_id}")).text).words

    paid = await http.post(
        f"/api/projects/{pid}/transactions/{tx_id}/mark-paid", headers=bearer(shop.live_key)
    )
    assert paid.status_code == 200, paid.text
    for outcome in ("done", "canceled"):  # paid is paid, whichever way the buyer came back
        page = Page((await http.get(f"/pay/{pid}/{outcome}/{tx_id}")).text)
        assert "Payment received" in page.words and "data-status-url" not in page.one("main")
    german = await http.get(f"/pay/{pid}/done/{tx_id}", headers={"Accept-Language": "de"})
    assert "Zahlung erhalten" in Page(german.text).words


async def test_the_node_s_own_pages_tell_nothing_of_unknown_or_other_projects_ids(admin, http):
    shop = await manual_shop(admin)
    other = await manual_shop(admin)
    theirs = await http.post(f"/api/checkout/manual/{other.project_id}", json={"productId": "book"})
    tx_id = theirs.json()["txId"]
    paths = [
        f"/pay/{shop.project_id}/done/{tx_id}",  # another project's transaction
        f"/pay/{shop.project_id}/done/tx_01JD0000000000000000000000",
        f"/pay/{shop.project_id}/canceled/not-a-tx",
        f"/pay/prj_0000000000000000/done/{tx_id}",
        f"/pay/nope/done/{tx_id}",
    ]
    answers = [_error(await http.get(path)) for path in paths]
    assert answers == [(404, "not_found", None)] * len(paths)
