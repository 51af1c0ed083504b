"""Compile the transport core (traffic/compiled.py MODULES) with Cython into build/compiled/,
from the same .py files that run interpreted: no second source. Run by scripts/setup.sh.

Cython compiles the modules as plain Python (annotation_typing off: the annotations stay
documentation and change no behaviour), which removes the interpreter's dispatch per bytecode;
the modules' semantics are Python's, which is why the same unit tests run against both builds.
The per-frame classes (traffic/compiled.py EXTENSION_CLASSES) become extension types whose
fields are declared from the sources by scripts/extension_types.py, in a staged copy of the
modules: nothing is written beside the sources.

Idempotent: nothing is rebuilt while build/compiled/manifest.json matches the sources, the
interpreter and the Cython version. The manifest is written last, and only after every module
compiled and imports, so a failed build leaves the interpreted core in force.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.join(REPO, "scripts"))
os.environ["MRCLAB_PURE_PYTHON"] = "1"     # this process imports the sources, never a build

from traffic import compiled  # noqa: E402

import extension_types  # noqa: E402  (scripts/, this script's own directory)

DIRECTIVES = {"language_level": 3, "annotation_typing": False, "binding": True,
              "embedsignature": False}


def wanted_manifest(cython_version: str) -> dict:
    return {"interpreter": compiled.interpreter_tag(), "cython": cython_version,
            "modules": {m: compiled.source_digest(m) for m in compiled.MODULES},
            "extension_classes": {m: list(c) for m, c in compiled.EXTENSION_CLASSES.items()},
            "extension_rule": compiled.source_digest("scripts.extension_types")}


def stage_sources(root: str) -> dict[str, str]:
    """Copy the compiled modules (and their packages' __init__.py) under `root`, with the
    extension types' declarations beside them (scripts/extension_types.py); {module: path of
    its staged .py}."""
    sources = {}
    for m in compiled.EXTENSION_CLASSES:
        with open(compiled.source_path(m)) as f:
            sources[m] = f.read()
    pxds = extension_types.declarations(sources, compiled.EXTENSION_CLASSES)
    staged = {}
    for module in compiled.MODULES:
        parts = module.split(".")
        for depth in range(1, len(parts)):
            init = ".".join(parts[:depth]) + ".__init__"
            dest = compiled.source_path(init, root)
            if not os.path.exists(dest):
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                shutil.copy(compiled.source_path(init), dest)
        staged[module] = compiled.source_path(module, root)
        shutil.copy(compiled.source_path(module), staged[module])
        if module in pxds:
            with open(os.path.join(root, *parts) + ".pxd", "w") as f:
                f.write(pxds[module])
    return staged


def current_manifest() -> dict | None:
    try:
        with open(compiled.MANIFEST) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def build(force: bool = False) -> int:
    try:
        import Cython
        from Cython.Build import cythonize
    except ImportError:
        print("build_core: Cython is not installed in this environment (pip install -e '.[dev]')",
              file=sys.stderr)
        return 1
    from setuptools import Distribution, Extension

    want = wanted_manifest(Cython.__version__)
    if not force and current_manifest() == want:
        print("build_core: compiled transport core is up to date")
        return 0
    print(f"build_core: compiling {len(compiled.MODULES)} modules with Cython "
          f"{Cython.__version__} (1-3 minutes)")
    # Build into a fresh staging directory, then swap it in: a half-built tree never shadows
    # the sources (traffic/compiled.py also refuses a build without a matching manifest).
    os.makedirs(os.path.join(REPO, "build"), exist_ok=True)
    stage = tempfile.mkdtemp(prefix="compiled-", dir=os.path.join(REPO, "build"))
    tmp = tempfile.mkdtemp(prefix="cython-", dir=os.path.join(REPO, "build"))
    try:
        src = os.path.join(tmp, "src")
        staged = stage_sources(src)
        exts = [Extension(m, [os.path.relpath(staged[m], src)],
                          extra_compile_args=["-O2", "-Wno-unused-function"])
                for m in compiled.MODULES]
        cwd = os.getcwd()
        os.chdir(src)
        try:
            modules = cythonize(exts, compiler_directives=DIRECTIVES, quiet=True,
                                include_path=[src], force=True)
            dist = Distribution({"ext_modules": modules})
            cmd = dist.get_command_obj("build_ext")
            cmd.build_lib = stage
            cmd.build_temp = tmp
            cmd.parallel = os.cpu_count() or 1
            dist.run_command("build_ext")
        finally:
            os.chdir(cwd)
        _check_imports(stage)
        with open(os.path.join(stage, "manifest.json"), "w") as f:
            json.dump(want, f, indent=1, sort_keys=True)
        if os.path.exists(compiled.BUILD_DIR):
            shutil.rmtree(compiled.BUILD_DIR)
        os.replace(stage, compiled.BUILD_DIR)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(stage, ignore_errors=True)
    print(f"build_core: ok ({compiled.BUILD_DIR})")
    return 0


def _check_imports(stage: str) -> None:
    """Every compiled module imports in a fresh interpreter that uses the staged build."""
    packages = sorted({m.rsplit(".", 1)[0] for m in compiled.MODULES})
    code = ("import sys, importlib; "
            + "".join(f"importlib.import_module({p!r}).__path__.insert(0, "
                      f"{os.path.join(stage, *p.split('.'))!r}); " for p in packages) +
            f"[importlib.import_module(m) for m in {compiled.MODULES!r}]; "
            "bad = [m for m in " + repr(compiled.MODULES) + " if sys.modules[m].__file__.endswith('.py')]; "
            "sys.exit(f'not compiled: {bad}' if bad else 0)")
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True,
                   env={**os.environ, "MRCLAB_PURE_PYTHON": "1"})


if __name__ == "__main__":
    sys.exit(build(force="--force" in sys.argv[1:]))
