"""The engine: what gathers. The vocabulary, regions, parse, walk, facts, values
(``flow``), and the rule API the rules decide through (``checker``)."""
