"""The async clients, routers and model-limit mixins: the one source of the sync ones.

`nisse_llm.transport._sync` is generated from these modules by ``scripts/gen_sync.py``
(unasync); only `io` is written by hand on each side.
"""
