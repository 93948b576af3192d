"""Exact integer polynomials: sums of monomials over numbered atoms.

Two polynomials with integer coefficients are equal as functions of integer
variables exactly when their canonical forms (this dict, zero coefficients
dropped, each monomial's atoms sorted) are equal: the fix gate compares a rewrite
with its original so (:mod:`lint_plugin.fix.gate.poly`). The width analysis reads
the same polynomials as bounds on a value (:mod:`lint_plugin.engine.flow.bounds`):
a polynomial is non-negative for all positive atoms when shifting each atom to its
least value leaves no negative coefficient.
"""

from __future__ import annotations

from collections.abc import Mapping

Poly = dict[tuple[int, ...], int]  # sorted atom ids -> coefficient

# A product of sums can multiply out exponentially; past this many monomials the
# caller reads the expression otherwise (the gate: by structure, equal only if
# spelled the same).
MAX_MONOMIALS = 4096


class TooLarge(Exception):
    """Raised by ``multiply`` past ``MAX_MONOMIALS`` monomials."""


def atoms(poly: Poly | None) -> set[int]:
    """The atoms ``poly`` reads."""
    return {atom for monomial in poly or () for atom in monomial}


def _accumulate(total: Poly, monomial: tuple[int, ...], coefficient: int) -> None:
    """Add a term, dropping a monomial whose coefficient cancels to zero."""
    value = total.get(monomial, 0) + coefficient
    if value:
        total[monomial] = value
    else:
        total.pop(monomial, None)


def _add(left: Poly, right: Poly, sign: int) -> Poly:
    total = dict(left)
    for monomial, coefficient in right.items():
        _accumulate(total, monomial, sign * coefficient)
    return total


def _scale(poly: Poly | None, factor: int) -> Poly:
    return {m: c * factor for m, c in (poly or {}).items()}


def _multiply(left: Poly, right: Poly) -> Poly:
    if len(left) * len(right) > MAX_MONOMIALS:
        raise TooLarge
    total: Poly = {}
    for m1, c1 in left.items():
        for m2, c2 in right.items():
            _accumulate(total, tuple(sorted(m1 + m2)), c1 * c2)
    return total


def constant(value: int) -> Poly:
    return {(): value} if value else {}


def variable(atom: int) -> Poly:
    return {(atom,): 1}


def add(left: Poly, right: Poly) -> Poly:
    return _add(left, right, 1)


def subtract(left: Poly, right: Poly) -> Poly:
    return _add(left, right, -1)


def multiply(left: Poly, right: Poly) -> Poly:
    """``left * right``; raises ``TooLarge`` past ``MAX_MONOMIALS`` terms."""
    return _multiply(left, right)


def scale(poly: Poly, factor: int) -> Poly:
    return {m: c * factor for m, c in poly.items() if c * factor}


def substitute(poly: Poly, values: Mapping[int, Poly]) -> Poly:
    """``poly`` with each atom in ``values`` replaced by its polynomial."""
    total: Poly = {}
    for monomial, coefficient in poly.items():
        product: Poly = {(): coefficient}
        kept: list[int] = []
        for atom in monomial:
            if atom in values:
                product = _multiply(product, values[atom])
            else:
                kept.append(atom)
        if kept:
            product = _multiply(product, {tuple(kept): 1})
        total = _add(total, product, 1)
    return total


def is_nonnegative(poly: Poly, least: Mapping[int, int]) -> bool:
    """A sufficient test that ``poly >= 0`` wherever each atom ``a`` is an integer
    of at least ``least[a]`` (1 when not given): written in ``a - least[a] >= 0``
    instead of ``a``, no coefficient is negative."""
    atoms = {atom for monomial in poly for atom in monomial}
    shifted = substitute(
        poly, {a: _add({(a,): 1}, constant(least.get(a, 1)), 1) for a in atoms}
    )
    return all(coefficient >= 0 for coefficient in shifted.values())


def evaluate(poly: Poly, values: Mapping[int, int]) -> int:
    total = 0
    for monomial, coefficient in poly.items():
        term = coefficient
        for atom in monomial:
            term *= values[atom]
        total += term
    return total
