"""Typed request and response bodies of the proxy's routes (pure: no I/O)."""
