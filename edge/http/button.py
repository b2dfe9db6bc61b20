"""The ``<cm-button>`` script (CONTRACT 5), served with the node's signing keys built in.

The source is ``edge/static/button/cm-button.js``, package data: a node installed from a wheel
carries it. The served file is that source with this node's public keys and the buyer's words
(edge/i18n/buyer, every language the node speaks; CONTRACT 4.1) filled in, so it stays one file
with one integrity hash, and its bytes, and so its SRI hash, are fixed per node and per release:

- ``/button/v1-<hash>.js`` is the file itself, named by its content, cached for a year;
- ``/button.js`` redirects there, cached for five minutes, so a snippet that names it follows an
  upgrade; its ``integrity`` attribute then has to be renewed (``edge button`` prints it).

``v1`` is the element's interface (attributes and events); the hash changes with every byte.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from dataclasses import dataclass
from html import escape
from importlib import resources

from quart import Blueprint, Response

from edge import i18n
from edge.domain.language import LANGUAGES
from edge.errors import NotFound
from edge.http.context import node
from edge.signing import Signer

blueprint = Blueprint("button", __name__)

SOURCE = resources.files("edge") / "static" / "button" / "cm-button.js"
KEYS_MARKER = "/*@signing-keys*/[]"
CATALOGUES_MARKER = "/*@catalogues*/{}"
# the return pages' words are said by the node (edge.http.return_page), not by the button
_NOT_THE_BUTTONS = ("return.",)
INTERFACE = "v1"
CURRENT_PATH = "/button.js"
_VERSIONED_CACHE = "public, max-age=31536000, immutable"
_CURRENT_CACHE = "public, max-age=300"
_JS_TYPE = "text/javascript; charset=utf-8"


@dataclass(frozen=True)
class ButtonScript:
    body: bytes
    integrity: str  # the SRI value: "sha384-<base64>"
    path: str  # where the node serves exactly these bytes


def current(signer: Signer) -> ButtonScript:
    return _build(json.dumps([{"kid": signer.kid, **signer.public_jwk}], separators=(",", ":")))


def script_bytes(signer: Signer) -> bytes:
    return current(signer).body


def sri_hash(signer: Signer) -> str:
    return current(signer).integrity


def snippet(
    signer: Signer,
    base_url: str,
    project_id: str,
    product_id: str,
    *,
    customer_ref: str | None = None,
    mode: str = "live",
    card_form: bool = False,
) -> str:
    """The HTML a merchant pastes into a page: the element and the script tag with its hash;
    with ``card_form`` (Paddle is offered in ``mode``) the hook that hands a Paddle checkout to
    Paddle.js too, or buyers who pick Paddle meet an error (README: Hosted card forms)."""
    attrs = {"project": project_id, "product": product_id, "customer-ref": customer_ref}
    if mode != "live":
        attrs["mode"] = mode
    rendered = "".join(f' {name}="{escape(value)}"' for name, value in attrs.items() if value)
    html = (
        f"<cm-button{rendered}>Buy</cm-button>\n"
        f'<script src="{escape(base_url)}{CURRENT_PATH}" integrity="{sri_hash(signer)}"'
        ' crossorigin="anonymous"></script>'
    )
    return html + CARD_FORM_HOOK if card_form else html


# Paddle's card form for every button on the page (the README's hook): the button loads no
# third-party script itself
CARD_FORM_HOOK = """
<!-- Paddle's card form: the button hands a Paddle checkout to Paddle.js -->
<script src="https://cdn.paddle.com/paddle/v2/paddle.js"></script>
<script>
  let paddleReady = false;
  document.querySelectorAll('cm-button').forEach((button) => {
    button.cardForm = ({token, publishableKey, mode}) => {
      if (!paddleReady) {
        if (mode === 'test') Paddle.Environment.set('sandbox');
        Paddle.Initialize({token: publishableKey});
        paddleReady = true;
      }
      Paddle.Checkout.open({transactionId: token});
    };
  });
</script>"""


@functools.cache
def _build(keys_json: str) -> ButtonScript:
    source = SOURCE.read_text(encoding="utf-8")
    for marker in (KEYS_MARKER, CATALOGUES_MARKER):
        if source.count(marker) != 1:
            raise RuntimeError(f"{SOURCE} must contain {marker} exactly once")
    filled = source.replace(KEYS_MARKER, keys_json).replace(CATALOGUES_MARKER, catalogues_json())
    body = filled.encode()
    digest = hashlib.sha384(body).digest()
    return ButtonScript(
        body=body,
        integrity="sha384-" + base64.b64encode(digest).decode(),
        path=f"/button/{INTERFACE}-{digest.hex()[:16]}.js",
    )


def catalogues_json() -> str:
    """The button's words, ``{lang: {key: text}}`` for every language the node speaks, as the
    script embeds them (keys sorted: the same catalogues make the same bytes)."""
    catalogues = {
        lang: {
            key: text
            for key, text in i18n.part("buyer", lang).items()
            if not key.startswith(_NOT_THE_BUTTONS)
        }
        for lang in LANGUAGES
    }
    return json.dumps(catalogues, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


# Both answers carry CORS: the snippet loads the script with crossorigin="anonymous" (SRI needs
# it), and a CORS fetch checks every hop of a redirect.
@blueprint.get(CURRENT_PATH)
async def current_script() -> Response:
    script = current(node().signer)
    return Response(
        b"",
        status=302,
        headers={
            "Location": script.path,
            "Cache-Control": _CURRENT_CACHE,
            "Access-Control-Allow-Origin": "*",
        },
    )


@blueprint.get("/button/<name>")
async def versioned_script(name: str) -> Response:
    script = current(node().signer)
    if f"/button/{name}" != script.path:
        raise NotFound(
            "not_found",
            f"This node serves the button at {CURRENT_PATH}; this version is gone.",
        )
    return Response(
        script.body,
        status=200,
        content_type=_JS_TYPE,
        headers={"Cache-Control": _VERSIONED_CACHE, "Access-Control-Allow-Origin": "*"},
    )
