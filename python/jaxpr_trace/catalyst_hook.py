"""Catalyst: records the jaxpr of every `qjit` capture (`QJIT.capture`, used
by both just-in-time and ahead-of-time compilation), with the dimension
variables of `abstracted_axes` in its input types."""

import importlib.abc
import importlib.util
import sys

import jaxpr_trace as _t

MODULE = "catalyst.jit"


def _exclude_library_frames():
    """Catalyst binds primitives from its own helpers (for_loop, patched
    staging rules); JAX would take those frames for the user's. Excluding
    Catalyst and PennyLane attributes each equation to the program's line."""
    import os

    from jax._src import source_info_util

    for name in ("catalyst", "pennylane"):
        mod = sys.modules.get(name)
        if mod is not None and getattr(mod, "__file__", None):
            source_info_util.register_exclusion(os.path.dirname(os.path.abspath(mod.__file__)) + os.sep)


def _patch(module):
    qjit_cls = getattr(module, "QJIT", None)
    original = getattr(qjit_cls, "capture", None)
    if original is None or getattr(original, "_jaxpr_trace", False):
        return
    _exclude_library_frames()
    catalyst = sys.modules.get("catalyst")
    _t.emit({"event": "library", "name": "catalyst", "version": getattr(catalyst, "__version__", None)})

    def capture(self, *args, **kwargs):
        fn = getattr(self, "original_function", None)
        name = getattr(self, "__name__", None) or getattr(fn, "__name__", "qjit")
        # A QNode has no code of its own: the function is its `func`.
        file = _t.code_file(fn)
        try:
            result = original(self, *args, **kwargs)
        except Exception as e:
            record = _t.is_user_file(file)
            if record:
                _t.record_error(e, f"tracing {name}")
            raise
        if _t.is_user_file(file):
            try:
                _t.record_function("qjit", name, file, _t.def_line(fn), result[0])
            except Exception as e:  # noqa: BLE001 - recording must never break the program
                _t._internal_error(e)
        return result

    _t.wraps(original, capture)
    capture._jaxpr_trace = True
    qjit_cls.capture = capture


class _Finder(importlib.abc.MetaPathFinder):
    """Patches `catalyst.jit` right after the program imports it."""

    def find_spec(self, name, path, target=None):
        if name != MODULE:
            return None
        sys.meta_path.remove(self)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            sys.meta_path.insert(0, self)
        if spec is None or spec.loader is None:
            return None
        exec_module = spec.loader.exec_module

        def exec_and_patch(module):
            exec_module(module)
            _patch(module)

        spec.loader.exec_module = exec_and_patch
        return spec


def install_when_imported():
    if MODULE in sys.modules:
        _patch(sys.modules[MODULE])
    else:
        sys.meta_path.insert(0, _Finder())
