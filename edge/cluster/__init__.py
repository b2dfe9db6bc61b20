"""Cluster mode: several nodes behind HAProxy on one shared store (issue 28)."""
