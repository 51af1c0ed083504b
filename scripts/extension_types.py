"""The per-frame classes of the compiled core as extension types: the Cython declarations
(augmenting .pxd files) that scripts/build_core.py writes beside its copies of the sources,
derived from the .py files themselves, so the sources stay the one statement of each class.

Why: compiled from plain classes, every `self.x` inside a method is a lookup in the instance's
dict (the interpreter's generic attribute protocol), which was most of the endpoints' own CPU in
a fabric run (docs/performance.md). Declared as an extension type's field, `self.x` in the
class's own methods is a read at a fixed offset of the object.

The rule keeps Python's semantics: a field is declared only for an attribute that the class's
`__init__` assigns in its top-level statements (so it is set before any method can read it, as
in the plain class), that no class of its chain defines in its body (a method, property or class
attribute of that name keeps working), and that no base class already declares. Every other
attribute, and any attribute set later by a caller or a test, lives in the instance's
`__dict__`, which every generated type keeps. A chosen class's bases must be chosen too (an
extension type cannot derive from a plain class) and must be single.
"""
from __future__ import annotations

import ast


class ExtensionTypeError(ValueError):
    """A chosen class cannot be an extension type as the rule above makes it."""


def _body_names(cls: ast.ClassDef) -> set[str]:
    names = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def _self_targets(stmt: ast.stmt) -> list[str]:
    """Attribute names of `self` that a top-level statement assigns (a = b = c, a, b = ...)."""
    if isinstance(stmt, ast.Assign):
        targets = stmt.targets
    elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        targets = [stmt.target]
    else:
        return []
    out = []
    for target in targets:
        for e in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
            if (isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name)
                    and e.value.id == "self"):
                out.append(e.attr)
    return out


def init_fields(cls: ast.ClassDef) -> list[str]:
    """The attributes `cls.__init__` assigns in its top-level statements, in order."""
    for node in cls.body:
        if isinstance(node, ast.FunctionDef) and node.name == "__init__":
            out: list[str] = []
            for stmt in node.body:
                out += [a for a in _self_targets(stmt) if a not in out]
            return out
    return []


def _base_name(cls: ast.ClassDef) -> str | None:
    if not cls.bases:
        return None
    if len(cls.bases) > 1 or not isinstance(cls.bases[0], ast.Name):
        raise ExtensionTypeError(f"class {cls.name}: an extension type has one named base")
    return cls.bases[0].id


def declarations(sources: dict[str, str], chosen: dict[str, tuple[str, ...]]) -> dict[str, str]:
    """{module: .pxd text} for `chosen` ({module: class names}), from `sources` ({module:
    source text} of every chosen module)."""
    classes: dict[str, tuple[str, ast.ClassDef]] = {}
    for module, names in chosen.items():
        tree = ast.parse(sources[module])
        found = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}
        for name in names:
            if name not in found:
                raise ExtensionTypeError(f"{module} has no top-level class {name}")
            cls = found[name]
            if "__slots__" in _body_names(cls):
                raise ExtensionTypeError(f"class {name} ({module}) declares __slots__")
            if cls.decorator_list:
                raise ExtensionTypeError(f"class {name} ({module}) is decorated")
            classes[name] = (module, cls)

    def chain(name: str) -> list[str]:
        out = [name]
        base = _base_name(classes[name][1])
        while base is not None:
            if base not in classes:
                raise ExtensionTypeError(f"class {out[-1]}: its base {base} is not chosen")
            out.append(base)
            base = _base_name(classes[base][1])
        return out

    out = {}
    for module, names in chosen.items():
        imports, blocks = [], []
        for name in names:
            lineage = chain(name)
            defined = set().union(*(_body_names(classes[c][1]) for c in lineage))
            declared = set()
            for base in lineage[1:]:
                declared |= set(init_fields(classes[base][1])) - defined
            fields = [f for f in init_fields(classes[name][1])
                      if f not in defined and f not in declared]
            base = lineage[1] if len(lineage) > 1 else None
            if base is not None and classes[base][0] != module:
                imports.append(f"from {classes[base][0]} cimport {base}")
            lines = [f"cdef class {name}" + (f"({base})" if base else "") + ":"]
            if base is None:
                lines += ["    cdef dict __dict__", "    cdef object __weakref__"]
            lines += [f"    cdef public object {f}" for f in fields]
            if len(lines) == 1:
                lines.append("    pass")
            blocks.append("\n".join(lines))
        out[module] = "\n".join(imports + ([""] if imports else []) + blocks) + "\n"
    return out
