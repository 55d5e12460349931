"""test_docstrings.py: every public function and method of the modules the documentation names
has `Args:`, `Returns:` and `Example:` sections in its docstring. Public: a name of the
module's __all__ (and the public methods of the classes and objects among them); a function
compiled in C is documented in its stub, dftrace/_dftrace.pyi."""
import ast
import importlib
import inspect
import os

import pytest

import dftrace

SECTIONS = ("Args:", "Returns:", "Example:")
MODULES = ["dftrace", "dftrace.dask", "dftrace.torch", "dftrace.torch_distributed"]
NEEDS_TORCH = {"dftrace.torch", "dftrace.torch_distributed"}


def _stub_docs():
    """{name or Class.method: docstring} of the C extension's stub."""
    path = os.path.join(os.path.dirname(dftrace.__file__), "_dftrace.pyi")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    docs = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            docs[node.name] = ast.get_docstring(node) or ""
        elif isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    docs[node.name + "." + item.name] = ast.get_docstring(item) or ""
    return docs


def _is_c(obj):
    return inspect.isbuiltin(obj) or type(obj).__name__ == "method_descriptor"


def _public_methods(cls):
    """(qualified name, function) of the public methods a class defines or inherits from
    dftrace's own classes (not from object, str, enum or other packages)."""
    out = []
    for klass in cls.__mro__:
        if not klass.__module__.startswith("dftrace"):
            continue
        for name, value in vars(klass).items():
            if name.startswith("_") or any(name == n for n, _ in out):
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if isinstance(value, property):
                continue  # an attribute, documented with its class
            if inspect.isfunction(value) or _is_c(value):
                out.append((name, (klass, value)))
    return out


def _entries(module_name):
    """(what, docstring) of each public function and method of a module."""
    module = importlib.import_module(module_name)
    stubs = _stub_docs()
    seen, out = set(), []

    def add(what, obj, stub_key):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        doc = stubs.get(stub_key, "") if _is_c(obj) else (inspect.getdoc(obj) or "")
        out.append((what, doc))

    for name in module.__all__:
        obj = getattr(module, name)
        if inspect.isfunction(obj) or _is_c(obj):
            add("%s.%s" % (module_name, name), obj, name)
            continue
        cls = obj if inspect.isclass(obj) else type(obj)
        if not cls.__module__.startswith("dftrace"):
            continue
        for meth, (klass, fn) in _public_methods(cls):
            add("%s.%s.%s" % (module_name, name, meth), fn, "%s.%s" % (klass.__name__, meth))
    return out


@pytest.mark.parametrize("module_name", MODULES)
def test_public_docstrings_have_sections(module_name):
    if module_name in NEEDS_TORCH:
        pytest.importorskip("torch", reason="python3-torch is not installed: %s imports it"
                            % module_name)
    entries = _entries(module_name)
    assert entries, module_name
    missing = ["%s: no %s" % (what, ", ".join(s for s in SECTIONS if s not in doc))
               for what, doc in entries if not all(s in doc for s in SECTIONS)]
    assert not missing, "\n".join(missing)


def test_examples_are_code():
    """An Example: section shows code (a `>>>` line or an indented block), not prose only."""
    for module_name in ("dftrace", "dftrace.dask"):
        for what, doc in _entries(module_name):
            example = doc.split("Example:", 1)[-1]
            assert ">>>" in example or "\n    " in example, what
