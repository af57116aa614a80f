"""The sync task loop, generated from `nisse_llm.agent._async` by ``tests/gen_sync.py``
(unasync)."""
