"""Plain record classes for the code ``check`` runs on every commit.

What ``dataclasses`` gives these modules (an ``__init__`` from annotated fields,
defaults and default factories, ``__repr__``, ``__eq__``, frozen instances with a
field hash), without its cost at start-up: measured here, importing
``dataclasses`` takes ~15 ms (it pulls in ``inspect``) and each decorated class
~1 ms of generated code, about 50 ms for the ~35 classes on ``check``'s path
against a 24 ms interpreter start-up. The code path that imports libcst anyway
(``fix``) keeps ``dataclasses``.
"""

from __future__ import annotations

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assignment to a field of a frozen record."""


class _Field:
    __slots__ = ("default", "default_factory", "repr")

    def __init__(self, default, default_factory, repr: bool) -> None:
        self.default = default
        self.default_factory = default_factory
        self.repr = repr


def field(*, default=_MISSING, default_factory=_MISSING, repr: bool = True):
    """A field's default (or factory for a fresh mutable default)."""
    return _Field(default, default_factory, repr)


def record(cls=None, /, *, frozen: bool = False, eq: bool = True):
    """Decorate a class with annotated fields, like ``@dataclass``."""

    def wrap(cls):
        return _build(cls, frozen, eq)

    return wrap if cls is None else wrap(cls)


def _build(cls, frozen: bool, eq: bool):
    fields: dict[str, _Field] = {}
    for base in reversed(cls.__mro__[1:]):
        fields.update(getattr(base, "__record_fields__", {}))
    # The class's own annotations (not inspect.get_annotations: no inspect here).
    for name in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063
        value = cls.__dict__.get(name, _MISSING)
        if isinstance(value, _Field):
            spec = value
            if spec.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, spec.default)
        else:
            spec = _Field(value, _MISSING, True)
        fields[name] = spec
    names = tuple(fields)
    shown = tuple(n for n in names if fields[n].repr)

    def __init__(self, *args, **kwargs):
        if len(args) > len(names):
            raise TypeError(
                f"{cls.__name__}() takes {len(names)} arguments, got {len(args)}"
            )
        values = dict(zip(names, args, strict=False))
        for key, value in kwargs.items():
            if key not in fields or key in values:
                raise TypeError(
                    f"{cls.__name__}() got an unexpected or repeated {key!r}"
                )
            values[key] = value
        for name in names:
            if name not in values:
                spec = fields[name]
                if spec.default_factory is not _MISSING:
                    values[name] = spec.default_factory()
                elif spec.default is not _MISSING:
                    values[name] = spec.default
                else:
                    raise TypeError(f"{cls.__name__}() missing argument {name!r}")
        self.__dict__.update(values)
        post_init = getattr(self, "__post_init__", None)
        if post_init is not None:
            post_init()

    def __repr__(self):
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in shown)
        return f"{type(self).__qualname__}({inner})"

    if "__init__" not in cls.__dict__:  # a hot record may spell its own out
        cls.__init__ = __init__
    cls.__repr__ = __repr__
    cls.__record_fields__ = fields
    if eq:

        def __eq__(self, other):
            if other.__class__ is not self.__class__:
                return NotImplemented
            return all(getattr(self, n) == getattr(other, n) for n in names)

        cls.__eq__ = __eq__
        if frozen:
            cls.__hash__ = lambda self: hash(tuple(getattr(self, n) for n in names))
        else:
            cls.__hash__ = None  # mutable and compared by value: unhashable
    if frozen:

        def __setattr__(self, name, value):
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self, name):
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        cls.__setattr__ = __setattr__
        cls.__delattr__ = __delattr__
    return cls


def replace(obj, /, **changes):
    """A copy of record ``obj`` with ``changes`` (``dataclasses.replace``)."""
    values = {name: getattr(obj, name) for name in obj.__record_fields__}
    values.update(changes)
    return type(obj)(**values)
