"""The address rules the node enforces, as the API reference's JSON Schema patterns (ECMA-262),
so that whatever the document calls valid the node takes (schemathesis checks both ways).

Each pattern is the node's rule, or a little narrower where the exact rule would take a page
of regex (upper-case host names, a trailing dot, IPv6 literals are left out): a client that
keeps to the pattern is never refused. tests/reference/test_patterns.py checks every pattern
against the node's own functions (edge.domain.urls, edge.domain.egress).
"""

from __future__ import annotations

from edge.domain.egress import METADATA_NAMES

# 0 to 65535: a port urllib reads
PORT = r"(?:[0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5])"
# printable ASCII but the backslash (browsers read it as a slash): what may follow a host
VISIBLE = r"[!-\[\]-~]"
# ... and neither ?, # nor @: an address the node calls has no query, fragment or credentials
PLAIN = r"[!-\"$->A-\[\]-~]"
# ... and in a query, ? again (neither # nor @): an endpoint is called as it is, query and all
QUERY = r"[!-\"$-?A-\[\]-~]"
LOOPBACK = r"(?:localhost|127\.0\.0\.1|\[::1\])"

# A redirect's host (edge.domain.urls): letters, digits, dots and hyphens, no dot or hyphen at
# either end. Plain http only on this machine.
_REDIRECT_HOST = r"[a-z0-9](?:[a-z0-9.-]*[a-z0-9])?"
_REDIRECT_START = rf"(?:https://{_REDIRECT_HOST}|http://{LOOPBACK})(?::{PORT})?"
REDIRECT = rf"^{_REDIRECT_START}(?:[/?#]{VISIBLE}*)?$"
ORIGIN = rf"^{_REDIRECT_START}/?$"

# A host the node calls (edge.domain.egress): a fully qualified name of labels of at most 63
# characters, its last one starting with a letter (never an IP address in disguise), and not a
# local or a cloud metadata name.
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_TLD = r"[a-z](?:[a-z0-9-]{0,61}[a-z0-9])?"
_METADATA = "|".join(sorted(name.replace(".", r"\.") for name in METADATA_NAMES if "." in name))
_END = r"(?:[:/]|$)"
NAME = rf"(?!(?:{_METADATA}){_END})(?:{_LABEL}\.)+(?!localhost{_END}){_TLD}"
HOST = rf"^{NAME}$"
CALLED = rf"^https://{NAME}(?::{PORT})?(?:/{PLAIN}*)?$"
# a notification endpoint: such an address, with a query if it likes, or http://localhost
# (CONTRACT 4.8)
ENDPOINT = rf"^(?:https://{NAME}|http://localhost)(?::{PORT})?(?:/{PLAIN}*)?(?:\?{QUERY}*)?$"
