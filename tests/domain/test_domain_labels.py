from edge.domain.labels import Label, distinct


def test_a_default_label_shown_twice_is_told_apart_by_the_provider():
    labels = [
        Label("Card", True, "Stripe"),
        Label("Card", True, "Paddle"),
        Label("PayPal", True, "PayPal"),
    ]
    assert distinct(labels) == ["Card", "Card (Paddle)", "PayPal"]


def test_the_first_in_order_keeps_the_plain_label():
    labels = [Label("Card", True, "Paddle"), Label("Card", True, "Stripe")]
    assert distinct(labels) == ["Card", "Card (Stripe)"]


def test_a_merchants_label_is_shown_as_chosen_and_a_default_after_it_is_told_apart():
    assert distinct([Label("card", False, "Stripe"), Label("Card", True, "Paddle")]) == [
        "card",
        "Card (Paddle)",
    ]
    assert distinct([Label("Card", True, "Stripe"), Label("Card", False, "Paddle")]) == [
        "Card",
        "Card",
    ]


def test_nothing_changes_when_labels_differ():
    labels = [Label("Visa or Mastercard", False, "Stripe"), Label("Card", True, "Paddle")]
    assert distinct(labels) == ["Visa or Mastercard", "Card"]


def test_every_kind_of_payment_has_its_icon_and_two_card_kinds_share_one() -> None:
    from pathlib import Path

    from edge.domain.labels import ICONS
    from edge.providers.registry import PROVIDERS

    icons = Path(__file__).resolve().parents[2] / "edge" / "static" / "icons"
    assert {p.kind for p in PROVIDERS.values()} <= set(ICONS)
    assert all((icons / name).is_file() for name in ICONS.values())
    assert {name: p.icon for name, p in PROVIDERS.items()} == {
        "stripe": "card.svg",
        "paypal": "wallet.svg",
        "paddle": "card.svg",
        "btcpay": "bitcoin.svg",
        "manual": "mail.svg",
    }
