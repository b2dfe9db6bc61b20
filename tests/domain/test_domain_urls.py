import pytest

from edge.domain.errors import InvalidInput
from edge.domain.urls import (
    first_disallowed_redirect,
    handout_allowed,
    origin_of,
    redirect_allowed,
    validate_origin,
    with_own_origins,
    with_tx_id,
)


@pytest.mark.parametrize(
    "url,origin",
    [
        ("https://shop.example/thanks?x=1#y", "https://shop.example"),
        ("HTTPS://Shop.EXAMPLE:443/", "https://shop.example"),
        ("https://shop.example:8443/a", "https://shop.example:8443"),
        ("http://shop.example:80/a", "http://shop.example"),
        ("http://shop.example:443/a", "http://shop.example:443"),
        ("http://localhost:3000/ok", "http://localhost:3000"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
        ("https://127.0.0.1", "https://127.0.0.1"),
        ("https://shop.example:/a", "https://shop.example"),
    ],
)
def test_origin_of(url, origin):
    assert origin_of(url) == origin


@pytest.mark.parametrize(
    "url",
    [
        "", "shop.example", "//shop.example/x", "/relative", "ftp://shop.example",
        "javascript:alert(1)", "https:shop.example", "https:/shop.example",
        "https://user@shop.example", "https://user:pw@shop.example", "https://@shop.example",
        "https://shop.example\\@evil.example", "https:\\\\evil.example",
        "https://shop.example\t.evil", "https://shop.example\n/x", " https://shop.example",
        "https://shop.example/a b", "https://shop.example:99999/", "https://shop.example:x/",
        "https://shöp.example/", "https://-shop.example/", "https://shop.example./",
        "https://sh%6Fp.example/", "https://", "https://[::1/", None, 42, b"https://a.b",
    ],
)  # fmt: skip
def test_origin_of_rejects(url):
    assert origin_of(url) is None


ALLOWED = ["https://shop.example", "HTTP://LOCALHOST:3000/", "https://pay.shop.example:8443"]


@pytest.mark.parametrize(
    "url,ok",
    [
        ("https://shop.example/thanks", True),
        ("https://shop.example:443/thanks", True),
        ("https://SHOP.example/thanks?a=1", True),
        ("https://pay.shop.example:8443/x", True),
        ("https://pay.shop.example/x", False),
        ("http://shop.example/thanks", False),  # http outside localhost
        ("http://localhost:3000/back", True),
        ("http://localhost:3001/back", False),
        ("https://evil.example/", False),
        ("https://shop.example.evil.example/", False),
        ("https://evil.example/https://shop.example", False),
        ("https://shop.example@evil.example/", False),
        ("https://evil.example\\@shop.example/", False),
        ("/thanks", False),
        (None, False),
    ],
)
def test_redirect_allowed(url, ok):
    assert redirect_allowed(url, ALLOWED) is ok


def test_redirect_http_only_for_loopback():
    for host in ["localhost", "127.0.0.1", "[::1]"]:
        assert redirect_allowed(f"http://{host}:8080/x", [f"http://{host}:8080"])
    assert not redirect_allowed("http://10.0.0.1/x", ["http://10.0.0.1"])
    assert not redirect_allowed("http://shop.example/x", ["http://shop.example"])


def test_redirect_ignores_garbage_allowlist_and_accepts_iterators():
    assert not redirect_allowed("https://shop.example/", ["not an origin", ""])
    assert not redirect_allowed("https://shop.example/", [])
    assert redirect_allowed("https://shop.example/", iter(["https://shop.example"]))


@pytest.mark.parametrize(
    "text,origin",
    [
        ("https://Shop.Example", "https://shop.example"),
        ("https://shop.example/", "https://shop.example"),
        ("https://shop.example:443", "https://shop.example"),
        ("https://shop.example:8443", "https://shop.example:8443"),
        ("http://localhost:3000", "http://localhost:3000"),
        ("http://127.0.0.1", "http://127.0.0.1"),
    ],
)
def test_validate_origin(text, origin):
    assert validate_origin(text) == origin


@pytest.mark.parametrize(
    "text",
    [
        "https://shop.example/path", "https://shop.example?x", "https://shop.example#x",
        "https://shop.example/?", "http://shop.example", "shop.example", "",
        "https://u@shop.example", "ftp://shop.example", None, 3,
    ],
)  # fmt: skip
def test_validate_origin_rejects(text):
    with pytest.raises(InvalidInput) as e:
        validate_origin(text, field="allowedOrigins[0]")
    assert e.value.field == "allowedOrigins[0]"


def test_a_projects_own_redirects_obey_the_per_call_rules():
    project = {
        "successUrl": "https://shop.example/thanks",
        "cancelUrl": "https://shop.example/cart",
        "allowedOrigins": ["https://shop.example"],
    }
    assert first_disallowed_redirect(project) is None
    assert first_disallowed_redirect({**project, "cancelUrl": "http://shop.example/"}) == (
        "cancelUrl"
    )
    assert first_disallowed_redirect({**project, "allowedOrigins": []}) == "successUrl"
    assert first_disallowed_redirect({"allowedOrigins": []}) is None


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("https://checkout.stripe.com/c/pay/cs_1", True),
        ("http://127.0.0.1:8123/c/cs_1", True),
        ("javascript:alert(1)", False),
        ("data:text/html,<b>x</b>", False),
        ("http://checkout.example/c", False),
        ("https://user:pw@checkout.example/c", False),
        ("//checkout.example/c", False),
        (None, False),
    ],
)
def test_what_a_provider_hands_out_reaches_the_buyer_only_when_safe(url, allowed):
    assert handout_allowed(url) is allowed


TX = "tx_01JD7K2Q9XMD4ABCDEFGHJKMNP"


@pytest.mark.parametrize(
    ("url", "filled"),
    [
        ("https://shop.example/thanks?tx={TX_ID}", f"https://shop.example/thanks?tx={TX}"),
        ("https://shop.example/orders/{TX_ID}/done", f"https://shop.example/orders/{TX}/done"),
        ("https://shop.example/t?tx=%7BTX_ID%7D", f"https://shop.example/t?tx={TX}"),
        ("https://shop.example/t?tx=%7bTX_ID%7d", f"https://shop.example/t?tx={TX}"),
        ("https://shop.example/{TX_ID}?again={TX_ID}", f"https://shop.example/{TX}?again={TX}"),
        ("https://shop.example/thanks", "https://shop.example/thanks"),
        ("https://shop.example/{tx_id}", "https://shop.example/{tx_id}"),  # the name is exact
    ],
)
def test_tx_id_placeholders_are_filled_with_the_transaction_id(url, filled):
    assert with_tx_id(url, TX) == filled


def test_an_address_with_the_placeholder_is_a_redirect_like_any_other():
    assert redirect_allowed("https://shop.example/thanks?tx={TX_ID}", ALLOWED)
    assert redirect_allowed(with_tx_id("https://shop.example/t/{TX_ID}", TX), ALLOWED)


def test_a_projects_own_addresses_add_their_origins():
    project = {
        "successUrl": "https://Shop.example:443/thanks",
        "cancelUrl": "http://localhost:3000/cart",
        "allowedOrigins": ["https://shop.example"],
    }
    assert with_own_origins(project) == ["https://shop.example", "http://localhost:3000"]
    unsafe = {"successUrl": "http://shop.example/x", "cancelUrl": "https://u@x.example/"}
    assert with_own_origins(unsafe) == []  # refused by the redirect rules, never added
    assert first_disallowed_redirect({**unsafe, "allowedOrigins": with_own_origins(unsafe)}) == (
        "successUrl"
    )
