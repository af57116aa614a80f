"""The task stores' sync side, generated from ``_async/`` (``tests/gen_sync.py``), except
``io.py``, hand-written on each side."""
