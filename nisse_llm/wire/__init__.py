"""Typed request and response bodies of the two proxy routes (pure: no I/O)."""
