"""The task stores' sync side, generated from ``_async/`` (``scripts/gen_sync.py``), except
``io.py``, hand-written on each side."""
