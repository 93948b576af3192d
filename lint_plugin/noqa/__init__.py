"""``# noqa`` directives: what they suppress, KVI100, ``--add-noqa``."""
