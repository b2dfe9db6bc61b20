"""The payment window speaks the buyer's language (issue 37, part 2; CONTRACT 4.1): the
element's ``lang``, else the page's, else the browser's; every text from the node's catalogues
(edge/i18n/buyer), amounts in the locale's way with each currency's own decimals, a country by
its name, dates by Intl. Screenshots in German and Polish, at a desktop's and a phone's width,
are kept as test artifacts."""

from __future__ import annotations

import re
from typing import Any

from browser.harness import ARTIFACTS, in_browser
from playwright.sync_api import expect
from support.client import MAILING_ADDRESS, manual_shop

from edge.domain.language import LANGUAGES
from edge.i18n import say

PHONE = {"width": 390, "height": 844}
# 19.99 EUR as each language's reference locale writes it (Intl, CLDR): the catalogue's language
# and the page's region decide, not the browser's
EUR_1999 = {
    "en-GB": "€19.99",
    "de-DE": "19,99\u00a0€",
    "fr-FR": "19,99\u00a0€",
    "es-ES": "19,99\u00a0€",
    "it-IT": "19,99\u00a0€",
    "nl-NL": "€\u00a019,99",
    "pt-PT": "19,99\u00a0€",
    "pl-PL": "19,99\u00a0€",
}


def window_of(page: Any) -> Any:
    return page.locator("cm-button").get_by_role("dialog")


def open_window(page: Any, url: str, buy: str = "Buy now") -> Any:
    page.goto(url)
    page.get_by_role("button", name=buy).click()
    window = window_of(page)
    expect(window.locator(".provider").first).to_be_focused()
    return window


def fallback_label(page: Any) -> str:
    """The label of a button the page gave no text of its own (the slot's fallback)."""
    return str(
        page.evaluate(
            """() => {
              const button = document.createElement('cm-button');
              document.querySelector('main').append(button);
              return button.shadowRoot.querySelector('[part=label]').innerText;
            }"""
        )
    )


async def test_a_german_page_gets_a_german_window_and_reference(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="book", page_lang="de-DE")

    def buyer(page: Any) -> dict[str, Any]:
        window = open_window(page, url)
        assert window.get_attribute("lang") == "de-DE"  # said to screen readers as German
        expect(window.get_by_text("Wählen Sie eine Zahlungsart")).to_be_visible()
        expect(window.get_by_text("Zahlungsarten geprüft")).to_be_visible()
        expect(window.get_by_role("button", name="Zahlungsfenster schließen")).to_be_visible()
        choice = window.get_by_role("button", name=re.compile("Zahlung per Post"))
        expect(choice).to_contain_text("19,99\u00a0€")
        page.screenshot(path=ARTIFACTS / "language-de-window.png")
        choice.click()
        expect(window.locator("[part=code]")).to_have_text(re.compile(r"CM-[0-9A-Z]{4}"))
        expect(window.get_by_role("group", name="Zahlungsreferenz")).to_be_visible()
        expect(window.get_by_role("button", name="Kopieren")).to_be_focused()
        page.screenshot(path=ARTIFACTS / "language-de-reference.png")
        return {
            "text": window.inner_text(),
            "address": window.locator("[part=address]").inner_text().split("\n"),
            "buy": fallback_label(page),
        }

    seen = await in_browser(buyer)
    text = seen["text"]
    for key in ("reference.amount", "reference.send_to", "reference.note", "action.done"):
        assert say("de", key) in text, key
    assert "Zahlung per Post: Senden Sie den Betrag an die unten stehende Adresse" in text
    assert seen["address"][-1] == "Vereinigtes Königreich"  # GB, named in German
    assert seen["address"][:-1] == [MAILING_ADDRESS["name"], *MAILING_ADDRESS["lines"]]
    assert seen["buy"] == "Kaufen"
    for english in ("Amount", "Send to", "Copy", "Done", "Choose how to pay", "Pay by mail"):
        assert english not in text.split("\n"), english


async def test_the_elements_lang_wins_over_the_pages_polish_on_a_phone(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="book", mode="test", lang="pl")

    def buyer(page: Any) -> str:
        page.set_viewport_size(PHONE)
        window = open_window(page, url)
        assert window.get_attribute("lang") == "pl"
        expect(window.get_by_text("Wybierz sposób płatności")).to_be_visible()
        expect(window.get_by_text("Tryb testowy")).to_be_visible()
        choice = window.get_by_role("button", name=re.compile("Płatność pocztą"))
        expect(choice).to_contain_text("19,99\u00a0€")
        page.screenshot(path=ARTIFACTS / "language-pl-phone-window.png")
        choice.click()
        expect(window.get_by_role("button", name="Kopiuj")).to_be_focused()
        page.screenshot(path=ARTIFACTS / "language-pl-phone-reference.png")
        box = window.locator("[part=reference]").bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"]
        return str(window.inner_text())

    text = await in_browser(buyer)
    assert "Wielka Brytania" in text and "Kwota" in text and "Gotowe" in text
    assert "Płatność pocztą: wyślij kwotę na poniższy adres" in text


async def test_every_language_lists_in_its_words_and_its_amounts(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page: Any) -> dict[str, tuple[str, str, str]]:
        seen = {}
        for locale in EUR_1999:
            url = shop_site.page_url(project=shop.project_id, product="book", page_lang=locale)
            window = open_window(page, url)
            seen[locale] = (
                window.locator(".prompt").inner_text(),
                window.locator("[part=provider-amount]").inner_text(),
                window.locator("[part=price]").inner_text(),
            )
            window.get_by_role("button", name=say(locale[:2], "window.close")).click()
            expect(window).to_be_hidden()
        return seen

    seen = await in_browser(buyer)
    assert sorted(locale[:2] for locale in seen) == sorted(LANGUAGES)
    for locale, (prompt, amount, price) in seen.items():
        assert prompt == say(locale[:2], "list.prompt"), locale
        assert amount == price == EUR_1999[locale], locale


async def test_without_a_lang_the_browsers_language_and_an_unspoken_one_is_skipped(
    admin, shop_site
):
    shop = await manual_shop(admin)
    bare = shop_site.page_url(project=shop.project_id, product="book", page_lang="none")
    japanese = shop_site.page_url(project=shop.project_id, product="book", page_lang="ja")

    def buyer(page: Any) -> list[str]:
        return [
            open_window(page, address).locator(".prompt").inner_text()
            for address in (bare, japanese)
        ]

    # a French browser (navigator.languages and Accept-Language: fr-FR)
    assert await in_browser(buyer, locale="fr-FR") == [say("fr", "list.prompt")] * 2
    # a browser in a language the node does not speak, on a page without lang: English
    assert await in_browser(buyer, locale="sv-SE") == [say("en", "list.prompt")] * 2


async def test_a_currency_keeps_its_own_decimals_and_a_subscription_its_interval(admin, shop_site):
    shop = await manual_shop(admin, {"amount": 1500, "currency": "JPY"})
    await admin.product(shop.project_id, "dinar", name="Dinar", amount=12.345, currency="KWD")

    def buyer(page: Any) -> list[str]:
        prices = []
        for product, lang in (("book", "de"), ("book", "en-US"), ("dinar", "en-GB")):
            url = shop_site.page_url(project=shop.project_id, product=product, page_lang=lang)
            window = open_window(page, url, buy="Buy now")
            prices.append(window.locator("[part=price]").inner_text())
            page.keyboard.press("Escape")
        return prices

    assert await in_browser(buyer) == ["1.500\u00a0¥", "¥1,500", "KWD\u00a012.345"]


async def test_an_error_is_said_in_the_buyers_language(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="book", page_lang="it-IT")

    def buyer(page: Any) -> str:
        page.route(
            "**/public-info*",
            lambda route: route.fulfill(
                status=429,
                json={
                    "error": {
                        "code": "rate_limited",
                        "message": "Too many requests.",
                        "retryable": True,
                    }
                },
            ),
        )
        page.goto(url)
        page.get_by_role("button", name="Buy now").click()
        alert = window_of(page).get_by_role("alert")
        expect(alert).to_be_visible()
        expect(window_of(page).get_by_role("button", name="Chiudi", exact=True)).to_be_focused()
        return str(alert.inner_text())

    assert await in_browser(buyer) == say("it", "error.rate_limited")


async def test_a_label_the_merchant_chose_is_shown_as_chosen(admin, shop_site):
    shop = await manual_shop(admin)
    address = {"mailingAddress": MAILING_ADDRESS}
    await admin.provider(
        shop.project_id,
        "manual",
        {"enabled": True, "label": "Per Brief", "live": address, "test": address},
    )
    url = shop_site.page_url(project=shop.project_id, product="book", page_lang="nl")

    def buyer(page: Any) -> str:
        return str(open_window(page, url).locator("[part=provider-label]").inner_text())

    assert await in_browser(buyer) == "Per Brief"
