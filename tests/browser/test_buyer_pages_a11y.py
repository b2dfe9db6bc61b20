"""The buyer's pages are accessible (issue 37, part 3; WCAG 2.2 AA): axe-core finds nothing on
any state of the payment window (the list open with focus in it, loading, an error, the
pay-by-mail reference, at a phone's width, at 200 % zoom) nor on the return pages (paid,
declined, canceled); a keyboard alone opens the window, chooses, pays and closes it, and focus
comes back to the button; focus is visible; names are given to what has no text; motion stops
for a buyer who asks for less (``prefers-reduced-motion``). Screenshots are kept as test
artifacts (``axe-*.png``), in English, German and Polish."""

from __future__ import annotations

import re
from typing import Any

import pytest
from browser.axe import assert_accessible, require_axe
from browser.harness import ARTIFACTS, in_browser, require_browser
from playwright.sync_api import expect
from support.client import manual_shop
from support.paypal_shop import paypal_shop

from edge.i18n import say

PHONE = {"width": 390, "height": 844}
# a 1280 x 720 window at 200 % zoom: half the CSS pixels, each drawn twice (WCAG 1.4.4, 1.4.10)
ZOOM_200 = {"viewport": {"width": 640, "height": 360}, "device_scale_factor": 2}

# the element that has focus, inside the button's shadow root, and how its focus is drawn
FOCUSED = """() => {
  const host = document.activeElement;
  const inner = host && host.shadowRoot ? host.shadowRoot.activeElement : null;
  const element = inner || host;
  const style = getComputedStyle(element);
  return {
    host: host ? host.localName : null,
    part: element.getAttribute('part'),
    text: (element.getAttribute('aria-label') || element.innerText || '').trim(),
    outline: style.outlineStyle === 'none' ? 0 : parseFloat(style.outlineWidth),
    visible: element.matches(':focus-visible'),
  };
}"""


@pytest.fixture(autouse=True)
def _axe() -> None:
    require_browser()
    require_axe()


def _window(page: Any) -> Any:
    return page.locator("cm-button").get_by_role("dialog")


def _focused(page: Any) -> dict[str, Any]:
    return dict(page.evaluate(FOCUSED))


async def test_every_state_of_the_payment_window(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page: Any) -> None:
        held: list[Any] = []
        page.route("**/public-info*", lambda route: held.append(route))  # held: loading
        page.goto(shop_site.page_url(project=shop.project_id, product="book", mode="test"))
        assert_accessible(page, "shop page with the button")
        page.get_by_role("button", name="Buy now").click()
        expect(_window(page).get_by_role("status")).to_have_text(say("en", "window.loading"))
        assert_accessible(page, "payment window loading")
        held[0].continue_()
        choice = _window(page).get_by_role("button", name=re.compile("Pay by mail"))
        expect(choice).to_be_focused()
        assert_accessible(page, "payment window list with focus")
        choice.click()
        expect(_window(page).locator("[part=code]")).to_be_visible()
        assert_accessible(page, "payment window pay-by-mail reference")
        _window(page).get_by_role("button", name="Copy").click()  # no clipboard permission here
        expect(
            _window(page).get_by_role("button", name=re.compile("Copied|Ctrl\\+C"))
        ).to_be_visible()
        assert_accessible(page, "payment window reference copied")

    await in_browser(buyer)


async def test_an_error_in_the_window(admin, shop_site):
    shop = await manual_shop(admin)

    def buyer(page: Any) -> None:
        page.route(
            "**/public-info*",
            lambda route: route.fulfill(
                status=503,
                json={"error": {"code": "unavailable", "message": "Down.", "retryable": True}},
            ),
        )
        page.goto(shop_site.page_url(project=shop.project_id, product="book", page_lang="de-DE"))
        page.get_by_role("button", name="Buy now").click()
        expect(_window(page).get_by_role("alert")).to_have_text(say("de", "error.fallback"))
        expect(_window(page).get_by_role("button", name="Schließen", exact=True)).to_be_focused()
        assert_accessible(page, "payment window error de")

    await in_browser(buyer)


@pytest.mark.parametrize(("lang", "size"), [("pl", PHONE), ("de-DE", PHONE)])
async def test_the_window_on_a_phone(admin, shop_site, lang, size):
    shop = await manual_shop(admin)

    def buyer(page: Any) -> None:
        page.set_viewport_size(size)
        page.goto(shop_site.page_url(project=shop.project_id, product="book", page_lang=lang))
        page.get_by_role("button", name="Buy now").click()
        expect(_window(page).locator(".provider")).to_be_focused()
        assert_accessible(page, f"payment window phone {lang}", full_page=False)
        _window(page).locator(".provider").click()
        expect(_window(page).locator("[part=code]")).to_be_visible()
        assert_accessible(page, f"payment window phone reference {lang}", full_page=False)

    await in_browser(buyer)


async def test_at_200_percent_zoom_everything_reflows_and_is_reachable(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="book", page_lang="de-DE")

    def buyer(page: Any) -> None:
        page.goto(url)
        page.get_by_role("button", name="Buy now").click()
        expect(_window(page).locator(".provider")).to_be_focused()
        assert_accessible(page, "payment window zoom 200 de", full_page=False)
        page.keyboard.press("Enter")
        done = _window(page).get_by_role("button", name="Fertig")
        expect(_window(page).locator("[part=code]")).to_be_visible()
        # no sideways scrolling (WCAG 1.4.10); the window scrolls to what is below
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        box = _window(page).bounding_box()
        assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 640
        page.keyboard.press("Tab")
        expect(done).to_be_focused()
        done_box = done.bounding_box()
        assert (
            done_box is not None
            and done_box["y"] >= 0
            and done_box["y"] + done_box["height"] <= 360
        )
        assert_accessible(page, "payment window zoom 200 reference de", full_page=False)

    await in_browser(buyer, **ZOOM_200)


async def test_the_keyboard_alone_opens_chooses_pays_and_closes(admin, shop_site):
    shop = await manual_shop(admin)
    url = shop_site.page_url(project=shop.project_id, product="book", page_lang="pl")

    def buyer(page: Any) -> list[dict[str, Any]]:
        seen = []
        page.goto(url)
        page.keyboard.press("Tab")  # the first stop of the page is the button
        seen.append(_focused(page))
        page.keyboard.press("Enter")
        expect(_window(page).locator(".provider")).to_be_focused()
        seen.append(_focused(page))
        page.keyboard.press("Tab")  # focus stays in the window: round to its close button
        seen.append(_focused(page))
        page.keyboard.press("Shift+Tab")
        seen.append(_focused(page))
        page.screenshot(path=ARTIFACTS / "keyboard-pl-choice-focused.png")
        page.keyboard.press("Enter")  # pay by mail
        expect(_window(page).locator("[part=code]")).to_be_visible()
        seen.append(_focused(page))
        page.keyboard.press("Tab")
        seen.append(_focused(page))
        page.screenshot(path=ARTIFACTS / "keyboard-pl-done-focused.png")
        page.keyboard.press("Enter")  # done: the window closes
        expect(_window(page)).to_be_hidden()
        seen.append(_focused(page))
        page.keyboard.press("Enter")  # again, and Escape closes it
        expect(_window(page).locator(".provider")).to_be_focused()
        page.keyboard.press("Escape")
        expect(_window(page)).to_be_hidden()
        seen.append(_focused(page))
        return seen

    button, choice, close, back, copy, done, closed, escaped = await in_browser(buyer)
    assert (button["host"], button["part"]) == ("cm-button", "button")
    assert choice["part"] == "provider" and choice["text"].startswith(say("pl", "method.manual"))
    assert (close["part"], close["text"]) == ("close", say("pl", "window.close"))
    assert back["part"] == "provider"
    assert (copy["part"], copy["text"]) == ("copy", say("pl", "reference.copy"))
    assert done["text"] == say("pl", "action.done")
    # focus is back on the button each time the window closes
    assert closed["part"] == escaped["part"] == "button" and closed["host"] == "cm-button"
    # and it shows, a 3 px ring, wherever the keyboard put it
    for focused in (button, choice, close, back, copy, done, closed, escaped):
        assert focused["visible"] and focused["outline"] >= 3, focused


async def test_motion_stops_when_the_buyer_asks_for_less(admin, shop_site):
    shop = await manual_shop(admin)
    spinner = (
        "getComputedStyle(document.querySelector('cm-button').shadowRoot"
        ".querySelector('.status .spinner')).animationName"
    )

    def buyer(page: Any) -> str:
        held: list[Any] = []
        page.route("**/public-info*", lambda route: held.append(route))
        page.goto(shop_site.page_url(project=shop.project_id, product="book"))
        page.get_by_role("button", name="Buy now").click()
        expect(_window(page).get_by_role("status")).to_be_visible()
        name = str(page.evaluate(spinner))
        held[0].continue_()
        return name

    assert await in_browser(buyer) == "cm-spin"
    assert await in_browser(buyer, reduced_motion="reduce") == "none"


async def _paypal_checkout(http: Any, admin: Any, paypal: Any) -> str:
    """A PayPal checkout's approval address at the simulator."""
    shop = await paypal_shop(admin, paypal)
    answer = await http.post(
        f"/api/checkout/paypal/{shop.project_id}",
        json={"productId": "book"},
        headers={"Authorization": f"Bearer {shop.test_key}"},
    )
    assert answer.status_code == 201, answer.text
    return str(answer.json()["url"])


@pytest.mark.parametrize(
    ("press", "locale", "heading"),
    [
        ("Cancel", "en-GB", "return.canceled.heading"),
        ("Decline", "de-DE", "return.declined.heading"),
        ("Approve", "pl-PL", "return.paid.heading"),
        ("Cancel", "pl-PL", "return.canceled.heading"),
        ("Decline", "en-US", "return.declined.heading"),
    ],
)
async def test_the_return_pages(admin, http, paypal, press, locale, heading):
    approval = await _paypal_checkout(http, admin, paypal)
    lang = locale[:2]

    def buyer(page: Any) -> dict[str, Any]:
        # the shop's success address answers 204: a navigation to it does not happen, so the page
        # that sends the buyer there stays to be checked
        page.route("https://shop.example/**", lambda route: route.fulfill(status=204))
        if press == "Approve":
            # return.js sends a paid buyer on before the body is even read (it stops the parser):
            # here it is left out, so the page a browser without script shows stays to be checked
            page.route(
                "**/static/return/return.js",
                lambda route: route.fulfill(body="", content_type="text/javascript"),
            )
        page.goto(approval)
        page.get_by_role("button", name=press).click()
        page.wait_for_url("**/return/paypal/**", wait_until="commit")
        expect(page.get_by_role("heading", level=1)).to_have_text(say(lang, heading))
        assert_accessible(page, f"return page {press} {locale}")
        page.keyboard.press("Tab")
        link = page.get_by_role("link")
        expect(link).to_be_focused()
        return {
            "lang": page.evaluate("document.documentElement.lang"),
            "title": page.title(),
            "link": link.inner_text(),
            "outline": page.evaluate(
                "parseFloat(getComputedStyle(document.activeElement).outlineWidth)"
            ),
        }

    paid = heading == "return.paid.heading"
    seen = await in_browser(buyer, locale=locale)
    assert seen["lang"] == lang and seen["title"] == say(lang, heading)
    assert seen["link"] == say(lang, "return.continue" if paid else "return.back")
    assert seen["outline"] >= 3


async def test_the_return_pages_on_a_phone_at_200_percent(admin, http, paypal):
    approval = await _paypal_checkout(http, admin, paypal)

    def buyer(page: Any) -> None:
        page.goto(approval)
        page.get_by_role("button", name="Decline").click()
        page.wait_for_url("**/return/paypal/**")
        assert page.evaluate("document.documentElement.scrollWidth <= innerWidth")
        assert_accessible(page, "return page declined phone zoom 200 de")

    await in_browser(
        buyer, locale="de-DE", viewport={"width": 195, "height": 422}, device_scale_factor=2
    )
