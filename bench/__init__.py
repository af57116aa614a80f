"""Benchmarks of nisse_llm against the floor (raw httpx) and the peer SDKs: ``python -m bench``."""
