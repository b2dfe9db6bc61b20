"""The buyer's return page (edge.http.return_page) in the buyer's language: chosen from the
``lang`` query parameter, then ``Accept-Language``; every outcome said in every language the
node speaks, with the provider's name as it is; never a "thank you" for a failure."""

from __future__ import annotations

import re

import pytest

from edge.actors.messages import Returned
from edge.domain.language import LANGUAGES
from edge.domain.returns import Outcome
from edge.http.return_page import language, render
from edge.i18n import say

PATH = "/return/paypal/prj_x/tx_y"


def returned(result: Outcome) -> Returned:
    return Returned(
        result, "PayPal", "https://shop.example/ok?a=1&b=2", "https://shop.example/cart", False
    )


def text_of(html: str) -> str:
    return re.sub(r"<[^>]+>", " ", html.split("<body>", 1)[1])


@pytest.mark.parametrize(
    ("query", "header", "expected"),
    [
        ({}, None, "en"),
        ({}, "de-DE,de;q=0.9,en;q=0.8", "de"),
        ({"lang": "pl"}, "de-DE", "pl"),  # the page shown again keeps its language
        ({"lang": "xx"}, "fr-CA, en;q=0.5", "fr"),
        ({"token": "EC-1"}, "ja, pt-BR;q=0.8", "pt"),
    ],
)
def test_the_language_is_the_query_then_the_browser(query, header, expected) -> None:
    assert language(query, header) == expected


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("result", list(Outcome))
def test_every_outcome_in_every_language(result: Outcome, lang: str) -> None:
    html = render(returned(result), "tx_y", PATH, lang)
    assert f'<html lang="{lang}">' in html
    key = "processing" if result is Outcome.PENDING else result.value
    heading = say(lang, f"return.{key}.heading")
    assert f"<title>{heading}</title>" in html and f"<h1>{heading}</h1>" in html
    shown = text_of(html)
    assert "PayPal" in shown or result is Outcome.EXPIRED
    assert "{" not in shown  # every placeholder filled
    if lang != "en":  # no English left on the page but the provider's name and the id
        english = say("en", f"return.{key}.text", provider="PayPal")
        assert english not in shown and say("en", "return.reference") not in shown.split()
    assert "thank" not in shown.lower() and "danke" not in shown.lower()


def test_a_failure_says_nothing_was_charged_and_shows_the_way_back() -> None:
    html = render(returned(Outcome.DECLINED), "tx_y", PATH, "de")
    assert "Zahlung abgelehnt" in html and "Ihnen wurde nichts berechnet" in html
    assert '<a class="onward" href="https://shop.example/cart">Zurück zum Shop</a>' in html
    assert f'data-main="{PATH}?shown=1&amp;lang=de"' in html  # the main window, in German too
    assert 'role="alert"' in html and "http-equiv" not in html
    english = render(returned(Outcome.CANCELED), "tx_y", PATH)
    assert "Payment canceled" in english and "You have not been charged" in english


def test_a_success_moves_on_with_its_words_and_a_language_it_does_not_speak_is_english() -> None:
    html = render(returned(Outcome.PAID), "tx_y", PATH, "pl")
    assert "Płatność otrzymana" in html and "Serwis PayPal potwierdził płatność" in html
    assert 'content="0;url=https://shop.example/ok?a=1&amp;b=2"' in html
    assert '<html lang="en">' in render(returned(Outcome.PAID), "tx_y", PATH, '"><script>')
