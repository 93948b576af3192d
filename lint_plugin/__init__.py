"""draft-kv-lint: keeps SGLang's EAGLE draft-decode kv_indices buffers sized."""

__version__ = "0.1.0"
