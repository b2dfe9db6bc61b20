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
