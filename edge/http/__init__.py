"""The HTTP front: Quart-Trio app, one blueprint per concern."""
