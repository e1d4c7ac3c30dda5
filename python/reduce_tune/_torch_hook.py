"""When the torch custom ops (reduce_tune._torch) are registered: at import of reduce_tune if torch
is already imported, else right after torch's own import, whenever that comes. This module never
imports torch: a process that never imports torch (CuPy, NumPy and other users) never pays for it.

``ops`` is reduce_tune._torch once the ops are registered (the public functions send torch tensors
there), else None; ``why`` says why not where torch was imported but the ops could not be
registered (a torch without ``torch.library.custom_op``, before 2.4): the public functions then
call the library directly, as without the ops (eager only, no autograd). ``tensor`` and ``fast``
are then torch.Tensor and reduce_tune._torch_fast.fast, the public functions' first test and
their eager path (before: a class no object is of, and None).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from typing import Any, Optional

ops: Any = None
why: str = ""


class _NoTensor:
    """What ``tensor`` is until torch's ops are registered: no object's type."""


tensor: Any = _NoTensor
fast: Any = None


def _register() -> None:
    global ops, why, tensor, fast
    if ops is not None:
        return
    try:
        from . import _torch, _torch_fast
    except Exception as e:  # noqa: BLE001 - an old or partial torch: the library directly, as before
        why = f"the torch custom ops could not be registered ({type(e).__name__}: {e})"
        return
    ops, why = _torch, ""
    fast, tensor = _torch_fast.fast, _torch.Tensor


class _Loader(importlib.abc.Loader):
    """torch's own loader, and the registration once torch's module has run."""

    def __init__(self, inner: importlib.abc.Loader):
        self._inner = inner

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._inner.exec_module(module)
        _uninstall()
        # The module keeps torch's loader, not this one.
        module.__loader__ = self._inner
        if getattr(module, "__spec__", None) is not None:
            module.__spec__.loader = self._inner
        _register()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: it asks the finders after it for torch's spec and hands it back with
    torch's loader wrapped by _Loader. It stays until torch's module has run (a find_spec that
    only asks whether torch is installed imports nothing)."""

    def __init__(self) -> None:
        self._asking = threading.local()

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Optional[Any]:
        if name != "torch" or getattr(self._asking, "now", False):
            return None
        self._asking.now = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            self._asking.now = False
        if spec is not None and spec.loader is not None and not isinstance(spec.loader, _Loader):
            spec.loader = _Loader(spec.loader)
        return spec


_finder: Optional[_Finder] = None


def _uninstall() -> None:
    global _finder
    if _finder is not None:
        try:
            sys.meta_path.remove(_finder)
        except ValueError:
            pass
        _finder = None


def install() -> None:
    """Registers the ops now if torch is imported, else when it is."""
    global _finder
    torch = sys.modules.get("torch")
    if torch is not None:
        if getattr(torch, "library", None) is not None:  # not a torch still being imported
            _register()
        return
    if _finder is None:
        _finder = _Finder()
        sys.meta_path.insert(0, _finder)
