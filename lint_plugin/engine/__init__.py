"""The engine: pre-filter, regions, parse, walk, facts, formulas, roles."""
