"""The canonical log and what it holds: events, images, tool specs and tool results."""
