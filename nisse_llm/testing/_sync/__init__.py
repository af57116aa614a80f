"""The sync scripted client, generated from `nisse_llm.testing._async` by
``scripts/gen_sync.py`` (unasync)."""
