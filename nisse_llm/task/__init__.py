"""The task file: its records, the log store, compaction and summaries."""
