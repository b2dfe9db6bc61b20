from edge.domain.errors import InvalidInput


def test_fields_and_defaults():
    e = InvalidInput("bad thing")
    assert isinstance(e, ValueError)
    assert (e.message, e.field, e.code) == ("bad thing", None, "invalid_request")
    assert str(e) == "bad thing"


def test_explicit_fields():
    e = InvalidInput("nope", field="productId", code="product_not_found")
    assert (e.message, e.field, e.code) == ("nope", "productId", "product_not_found")
    assert "productId" in repr(e)
