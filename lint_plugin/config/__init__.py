"""Configuration: the table, its discovery, globs, selection."""
