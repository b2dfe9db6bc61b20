import pytest

from edge.domain.errors import InvalidInput
from edge.domain.logfilter import status_filter


def test_codes_classes_and_errors():
    assert status_filter(None)(200) and status_filter(None)(None)
    assert status_filter("404")(404) and not status_filter("404")(400)
    four = status_filter("4xx")
    assert four(401) and four(499) and not four(500) and not four(None)
    errors = status_filter("error")
    assert errors(400) and errors(503) and errors(None) and not errors(200)
    both = status_filter("2xx, 503")
    assert both(201) and both(503) and not both(502)


@pytest.mark.parametrize(
    "text", ["", "4x", "600", "abc", "4XX", " 4xx", "4xx,", ",", "2xx;3xx", ",".join(["4xx"] * 11)]
)
def test_anything_else_is_refused(text):
    with pytest.raises(InvalidInput):
        status_filter(text)
