"""The fleet agent's sync driver, generated from ``bench/_async/`` by ``scripts/gen_sync.py``."""
