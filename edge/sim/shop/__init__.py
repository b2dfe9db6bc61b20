"""A demo merchant site for ``edge serve --demo``: a product page with the buy button and a
thank-you page that watches the payment's status, served on its own origin like a real shop."""

from edge.sim.shop.server import DemoShop

__all__ = ["DemoShop"]
