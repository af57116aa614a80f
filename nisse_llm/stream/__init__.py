"""Streaming replies (sans-I/O): SSE bytes in, typed deltas out, a `Completion` at the end."""
