"""The sync task loop, generated from `nisse_llm.agent._async` by ``scripts/gen_sync.py``
(unasync)."""
