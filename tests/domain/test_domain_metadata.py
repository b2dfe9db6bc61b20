import pytest

from edge.domain.errors import InvalidInput
from edge.domain.metadata import validate_metadata


def test_none_and_empty():
    assert validate_metadata(None) == {}
    assert validate_metadata({}) == {}


def test_valid_copy():
    src = {"customerRef": "u-42", "a.b_c-D9": "", "k" * 40: "v" * 500}
    out = validate_metadata(src)
    assert out == src and out is not src


def test_twenty_keys_ok_twenty_one_refused():
    assert len(validate_metadata({f"k{i}": "v" for i in range(20)})) == 20
    with pytest.raises(InvalidInput) as e:
        validate_metadata({f"k{i}": "v" for i in range(21)})
    assert e.value.field == "metadata"


@pytest.mark.parametrize("bad", [[], "x", 1, ["a", "b"], True])
def test_not_an_object(bad):
    with pytest.raises(InvalidInput) as e:
        validate_metadata(bad)
    assert e.value.field == "metadata" and e.value.code == "invalid_request"


@pytest.mark.parametrize("key", ["", "k" * 41, "a b", "ä", "a/b", "a\n", 1, None])
def test_bad_keys(key):
    with pytest.raises(InvalidInput) as e:
        validate_metadata({key: "v"})
    assert e.value.field == "metadata"


@pytest.mark.parametrize("value", [1, None, True, {"x": "y"}, ["a"], "v" * 501])
def test_bad_values(value):
    with pytest.raises(InvalidInput) as e:
        validate_metadata({"someKey": value})
    assert e.value.field == "metadata.someKey"
    assert "someKey" in e.value.message


def test_custom_field_name():
    with pytest.raises(InvalidInput) as e:
        validate_metadata({"x": 1}, field="body.metadata")
    assert e.value.field == "body.metadata.x"


def test_value_length_counts_characters():
    assert validate_metadata({"k": "é" * 500})["k"] == "é" * 500
