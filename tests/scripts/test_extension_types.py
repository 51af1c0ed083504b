"""The extension types' declarations (scripts/extension_types.py): fields only where Python's
semantics are kept (assigned at the top of __init__, not a name of any class body, not a base's
field), every root type with a __dict__, bases cimported across modules; and, when the compiled
core is in force, the chosen classes really are extension types."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
import extension_types as et  # noqa: E402

from traffic import compiled  # noqa: E402

BASE = textwrap.dedent('''
    class Base:
        LIMIT = 3
        def __init__(self, a):
            self.a = a
            self.shared = 0
        @property
        def doubled(self):
            return 2 * self.a
''')
CHILD = textwrap.dedent('''
    from pkg.base import Base
    class Child(Base):
        def __init__(self, a, b):
            super().__init__(a)
            self.b = b
            self.shared = 1
            self.c, self.d = b, b
            self.LIMIT = 4
            if b:
                self.maybe = 1
            self.doubled_cache = None
        def later(self):
            self.e = 5
''')


def test_fields_are_the_top_level_init_assignments_only():
    out = et.declarations({"pkg.base": BASE, "pkg.child": CHILD},
                          {"pkg.base": ("Base",), "pkg.child": ("Child",)})
    assert out["pkg.base"] == ("cdef class Base:\n    cdef dict __dict__\n"
                               "    cdef object __weakref__\n    cdef public object a\n"
                               "    cdef public object shared\n")
    # b, c, d, doubled_cache: assigned at the top of Child.__init__. Not: shared (Base's field),
    # LIMIT (a class attribute), maybe (conditional), e (assigned by a method).
    assert out["pkg.child"] == ("from pkg.base cimport Base\n\ncdef class Child(Base):\n"
                                "    cdef public object b\n    cdef public object c\n"
                                "    cdef public object d\n    cdef public object doubled_cache\n")


def test_a_class_without_fields_still_gets_a_body():
    out = et.declarations({"m": "class Mixin:\n    def f(self):\n        self.x = 1\n"},
                          {"m": ("Mixin",)})
    assert out["m"] == "cdef class Mixin:\n    cdef dict __dict__\n    cdef object __weakref__\n"


@pytest.mark.parametrize("source, names, words", [
    ("class A(B):\n    pass\n", ("A",), "its base B is not chosen"),
    ("class A(B, C):\n    pass\n", ("A",), "one named base"),
    ("class A:\n    __slots__ = ('x',)\n", ("A",), "declares __slots__"),
    ("import dataclasses\n@dataclasses.dataclass\nclass A:\n    x: int = 0\n", ("A",),
     "is decorated"),
    ("class A:\n    pass\n", ("Missing",), "has no top-level class Missing"),
])
def test_classes_that_cannot_be_extension_types_are_refused(source, names, words):
    with pytest.raises(et.ExtensionTypeError, match=words):
        et.declarations({"m": source}, {"m": names})


def test_the_chosen_classes_of_the_core_are_declarable():
    sources = {m: Path(compiled.source_path(m)).read_text() for m in compiled.EXTENSION_CLASSES}
    out = et.declarations(sources, compiled.EXTENSION_CLASSES)
    assert set(out) == set(compiled.EXTENSION_CLASSES)
    assert set(compiled.EXTENSION_CLASSES) <= set(compiled.MODULES)
    assert "cdef public object cfg" in out["traffic.core.sender"]


def test_compiled_core_builds_them_as_extension_types():
    import importlib
    modules = {m: importlib.import_module(m) for m in compiled.EXTENSION_CLASSES}
    if not compiled.active():
        pytest.skip(f"the compiled core is not in force: {compiled.status()}")
    heap_type = 1 << 9          # Py_TPFLAGS_HEAPTYPE: set on every class a class statement makes
    plain = [f"{m}.{name}" for m, names in compiled.EXTENSION_CLASSES.items() for name in names
             if getattr(modules[m], name).__flags__ & heap_type]
    assert not plain, f"compiled as plain classes: {plain}"
