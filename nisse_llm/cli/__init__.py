"""The ``nisse-llm`` command: configuration checks, schemas, the starter file, ``complete``."""
