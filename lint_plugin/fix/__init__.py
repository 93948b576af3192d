"""``fix``: the rounds, edits, wrapping, line endings, atomic writes."""
