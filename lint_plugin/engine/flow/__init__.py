"""Values and data flow: what a width can be worth, on every path."""
