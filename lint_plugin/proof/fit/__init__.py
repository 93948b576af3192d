"""The kernel fit: is the width the helpers give a row what the kernel writes?

A second product beside the differential harness (its parent package): no class
is driven here. The kernel's Triton source (:mod:`..triton_source` cuts it out) is
read for the extent of every store (:mod:`.extent`), bounded per program
(:mod:`.store_bound`), and each branch's claims are proven for all sizes or
refuted by a counterexample (:mod:`.judge`), with exact arithmetic over sympy
expressions (:mod:`.positivity`, :mod:`.numeric`) and one launch evaluated
concretely (:mod:`.concrete`). ``draft-kv-lint prove --kernel`` prints it.
"""
