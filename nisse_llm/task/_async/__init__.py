"""The task stores' async source: ``_sync/`` is generated from it (``scripts/gen_sync.py``),
except ``io.py``, hand-written on each side."""
