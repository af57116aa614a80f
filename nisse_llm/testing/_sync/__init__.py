"""The sync scripted client, generated from `nisse_llm.testing._async` by
``tests/gen_sync.py`` (unasync)."""
