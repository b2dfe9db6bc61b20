"""The merchant dashboard (CONTRACT 4.7), served by the node at ``/dashboard/``: server-rendered
pages (Jinja2), a little plain JavaScript of its own (copy buttons, the dialog that asks before
an action that cannot be undone; every page works without it), no build step, nothing from
another origin. WCAG 2.2 AA: tests/browser/test_dashboard_a11y.py runs axe-core on every page
and state. It is a client of the node's own API (``api``), signed in with an account's
session. ``site`` holds the blueprint; importing the page modules registers their routes."""

from edge.dashboard import account_pages, auth_pages, project_pages, settings_pages
from edge.dashboard.site import blueprint, root

# the blueprints of HTML pages, which the node serves beside its API (the API reference does not
# describe them)
PAGES = (blueprint, root)

__all__ = [
    "PAGES",
    "account_pages",
    "auth_pages",
    "blueprint",
    "project_pages",
    "root",
    "settings_pages",
]
