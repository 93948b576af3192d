"""``check``: the pipeline over files, the file list, the cache."""
