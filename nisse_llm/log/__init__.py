"""The canonical log's former home, kept for imports written against it for one release:
the package is now `nisse_llm.events` (it holds the conversation's events, not logging).
Each module here gives its names from their new home with a DeprecationWarning naming it;
`Toolbox`, which runs tools, is in `nisse_llm.tools`."""
