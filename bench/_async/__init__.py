"""The fleet agent's async driver: the one source of the sync one (``bench/_sync/``)."""
