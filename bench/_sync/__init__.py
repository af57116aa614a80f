"""The fleet agent's sync driver, generated from ``bench/_async/`` by ``tests/gen_sync.py``."""
