"""Adding the helpers' import: by editing text, or with libcst."""
