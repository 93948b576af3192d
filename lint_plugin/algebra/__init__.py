"""The integer algebra under the engine and the fix gate.

* :mod:`.arith`: a tree's ``+``/``-``/``*`` flattened into sums and products of
  leaves, each leaf with its role (formula matching: KVI001, KVI002, KVI006).
* :mod:`.symbolic`: values of expressions as the width analysis computes them
  (constants, sizes by role, operations, a helper call as its formula).
* :mod:`.polynomial`: exact integer polynomials: the gate's equality proof and the
  width analysis's bounds.
* :mod:`.helpers`: the two helpers' names, parameters and formulas.

Nothing here reads bindings: what a name is bound to is the engine's business
(and, independently, the gate's: it is why the gate is trusted).
"""
