"""The async task loop: the one source of `nisse_llm.agent._sync`, generated from it by
``scripts/gen_sync.py`` (unasync)."""
