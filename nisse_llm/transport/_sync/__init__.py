"""The sync clients, routers and model-limit mixins, generated from `nisse_llm.transport._async`
by ``scripts/gen_sync.py`` (unasync); only `io` is written by hand."""
