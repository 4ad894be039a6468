"""Numba compilation of kernels, with the plain function as the reference."""

from __future__ import annotations

__all__ = ["compiled"]

_COMPILED: dict = {}


def compiled(fn, *, jit: bool = True):
    """``fn`` compiled by ``numba.njit`` (nopython, ``nogil``; cached on disk where the package
    directory is writable), or ``fn`` itself when ``jit`` is false or numba cannot be imported.
    Numba's disk cache does not notice changes to helpers that ``fn`` calls from another module:
    keep a kernel and its ``register_jitable`` helpers in one module.

    The plain function is the reference: it runs the same arithmetic, slowly. Dispatchers are
    built once per process and function (compilation itself happens on the first call).
    """
    if not jit:
        return fn
    if fn not in _COMPILED:
        try:
            import numba
        except ImportError:  # pragma: no cover - numba is a dependency of plcore
            _COMPILED[fn] = fn
        else:
            try:
                _COMPILED[fn] = numba.njit(cache=True, nogil=True)(fn)
            except RuntimeError:  # no writable cache location: compile per process
                _COMPILED[fn] = numba.njit(cache=False, nogil=True)(fn)
    return _COMPILED[fn]
