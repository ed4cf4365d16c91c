"""A native build called from Python: ctypes over the shared library's C
ABI (docs/native.md, "The C ABI")."""

from __future__ import annotations

import atexit
import ctypes
import shutil
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple

if TYPE_CHECKING:
    from ._program import Program


# jx_array's dtype codes (docs/native.md, "Dtypes"), by numpy's dtype names.
DTYPES = {
    "bool": 0,
    "int8": 1,
    "int16": 2,
    "int32": 3,
    "int64": 4,
    "uint8": 5,
    "uint16": 6,
    "uint32": 7,
    "uint64": 8,
    "float16": 9,
    "bfloat16": 10,
    "float32": 11,
    "float64": 12,
    "complex64": 13,
    "complex128": 14,
}
NAMES = {code: name for name, code in DTYPES.items()}
MAX_RANK = 8


class JxArray(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("dtype", ctypes.c_int32),
        ("rank", ctypes.c_int32),
        ("shape", ctypes.c_int64 * MAX_RANK),
    ]


class NativeCallError(RuntimeError):
    """The native function refused its inputs or failed (its `NAME_error()`)."""


def _numpy_dtype(name: str) -> Any:
    import numpy as np

    if name == "bfloat16":
        import ml_dtypes  # JAX's own dependency

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


_CODES: Dict[Any, int] = {}


def _code_of(dtype: Any) -> Optional[int]:
    """jx_array's dtype code of numpy dtype `dtype`, None when the ABI does
    not carry it (the table is made on first use: numpy is imported
    lazily)."""
    if not _CODES:
        for name, code in DTYPES.items():
            try:
                _CODES[_numpy_dtype(name)] = code
            except (ImportError, TypeError):  # bfloat16 without ml_dtypes
                pass
    return _CODES.get(dtype)


_DTYPE_OF_CODE: Dict[int, Any] = {}


def _dtype_of_code(code: int) -> Any:
    """The numpy dtype of jx_array dtype code `code`."""
    dtype = _DTYPE_OF_CODE.get(code)
    if dtype is None:
        dtype = _DTYPE_OF_CODE[code] = _numpy_dtype(NAMES[code])
    return dtype


def _host_view(leaf: Any) -> Any:
    """`leaf` as a numpy array: itself, or an array of another library
    (a JAX array on the CPU) read through DLPack without a copy where the
    exporter allows it (else through `np.asarray`)."""
    import numpy as np

    if type(leaf) is np.ndarray or not hasattr(leaf, "__dlpack__"):
        return leaf
    try:
        return np.from_dlpack(leaf)
    except (TypeError, ValueError, BufferError, RuntimeError):
        # Not on the CPU, or a dtype DLPack does not carry (bfloat16 in
        # older numpy): numpy's own conversion copies it.
        return np.asarray(leaf)


def _as_jax(result: Any) -> Any:
    """A numpy result as a JAX array, through DLPack (no copy where JAX
    can take the buffer as it is)."""
    import jax

    try:
        return jax.dlpack.from_dlpack(result)
    except (TypeError, ValueError, BufferError, RuntimeError):
        return jax.numpy.asarray(result)


class NativeFunction:
    """The built library's entry point as a Python function: numpy arrays in
    and out, or JAX arrays in and out (read and returned through DLPack, as a
    drop-in for the jitted function); PRNG keys as JAX keys, in the pytree
    the traced function returned."""

    def __init__(
        self,
        library: str,
        header: str,
        name: str,
        folder: str,
        program: "Program",
        in_avals: Optional[List[Tuple[Optional[Tuple[int, ...]], Optional[str]]]],
        out_tree: Any,
    ):
        self.library_path = library
        self.header = header  # the C header the build wrote
        self.name = name
        self.program = program
        self._folder = folder
        self._in_avals = in_avals  # (shape, dtype name) of every input, constants first, or None
        self._out_tree = out_tree
        self._consts = list(getattr(program.closed, "consts", []) or [])
        # The PRNG implementation of each output that is a key (the library
        # returns its key data), so that it comes back a key, as jax.jit's.
        self._out_keys = [getattr(getattr(a, "dtype", None), "_impl", None) for a in getattr(program.closed, "out_avals", [])]
        lib = ctypes.CDLL(library)
        self._lib = lib
        self._call = getattr(lib, name)
        self._call.argtypes = [ctypes.POINTER(JxArray), ctypes.c_int64, ctypes.POINTER(JxArray), ctypes.c_int64]
        self._call.restype = ctypes.c_int32
        self._error = getattr(lib, f"{name}_error")
        self._error.restype = ctypes.c_char_p
        self._free = getattr(lib, f"{name}_free")
        self._free.argtypes = [ctypes.c_void_p]
        self._free.restype = None
        self.num_inputs = int(getattr(lib, f"{name}_num_inputs")())
        self.num_outputs = int(getattr(lib, f"{name}_num_outputs")())
        atexit.register(shutil.rmtree, folder, True)
        self._inputs_type = JxArray * max(self.num_inputs, 1)
        self._outputs_type = JxArray * max(self.num_outputs, 1)
        # `_in_avals` as numpy dtypes and shape tuples, which compare fast.
        self._in_checks = (
            None
            if in_avals is None
            else [
                (tuple(shape) if shape is not None else None, _numpy_dtype(dtype) if dtype is not None else None)
                for shape, dtype in in_avals
            ]
        )

    def _wrong_input(self, i: int, a: Any) -> None:
        """Raises the error of input `i` (array `a`) not being the traced one."""
        want_shape, want_dtype = self._in_avals[i] if self._in_avals is not None else (None, None)
        which = f"input {i}" if i >= len(self._consts) else f"constant {i}"
        if want_dtype is not None and a.dtype.name != want_dtype:
            wanted = list(want_shape) if want_shape is not None else "[...]"
            raise TypeError(f"{self.name}: {which} must be {want_dtype}{wanted}, got {a.dtype.name}{list(a.shape)}")
        raise ValueError(f"{self.name}: {which} must have shape {tuple(want_shape or ())}, got {tuple(a.shape)}")

    def __repr__(self) -> str:
        return f"<jaxpr native function {self.name}: {self.num_inputs} inputs, {self.num_outputs} outputs, {self.library_path}>"

    def _flatten(self, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> List[Any]:
        if self.program.in_tree is not None:
            import jax

            leaves, tree = jax.tree_util.tree_flatten((tuple(args), dict(kwargs)))
            if tree != self.program.in_tree:
                raise TypeError(
                    f"{self.name}: the arguments' structure {tree} is not the traced one {self.program.in_tree}"
                )
            return list(leaves)
        if kwargs:
            raise TypeError(f"{self.name}: a function built from a jaxpr takes positional arrays only")
        return list(args)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        import numpy as np

        leaves = self._consts + self._flatten(args, kwargs)
        if len(leaves) != self.num_inputs:
            raise TypeError(
                f"{self.name} takes {self.num_inputs - len(self._consts)} arrays, got {len(leaves) - len(self._consts)}"
            )
        # A call costs a few microseconds natively: what is done per input
        # here avoids numpy's Python-level attributes (`dtype.name`,
        # `ndarray.ctypes`) and new ctypes types.
        inputs = self._inputs_type()
        keep = []  # the arrays whose memory `inputs` points into
        # Given JAX arrays (not only the traced constants), results are JAX
        # arrays too (a JAX array means JAX is imported).
        jax_module = sys.modules.get("jax")
        given_jax = jax_module is not None and any(
            isinstance(x, jax_module.Array) for x in leaves[len(self._consts) :]
        )
        for i, leaf in enumerate(leaves):
            if not isinstance(leaf, np.ndarray) and "key<" in str(getattr(leaf, "dtype", "")):
                import jax

                leaf = jax.random.key_data(leaf)
            leaf = _host_view(leaf)
            if type(leaf) is np.ndarray and leaf.flags.c_contiguous:
                a = leaf
            else:
                a = np.require(leaf, requirements="C")  # ascontiguousarray would make a scalar 1-d
            code = _code_of(a.dtype)
            if code is None:
                raise TypeError(f"{self.name}: input {i} has dtype {a.dtype}, which the native ABI does not carry")
            if a.ndim > MAX_RANK:
                raise ValueError(f"{self.name}: input {i} has rank {a.ndim}; the native ABI carries at most {MAX_RANK}")
            if self._in_checks is not None:
                want_shape, want_dtype = self._in_checks[i]
                if (want_dtype is not None and a.dtype != want_dtype) or (
                    want_shape is not None and a.shape != want_shape
                ):
                    self._wrong_input(i, a)
            slot = inputs[i]
            slot.data = a.__array_interface__["data"][0]
            slot.dtype = code
            slot.rank = a.ndim
            slot.shape[: a.ndim] = a.shape
            keep.append(a)
        outputs = self._outputs_type()
        status = self._call(inputs, len(keep), outputs, self.num_outputs)
        if status != 0:
            message = self._error()
            raise NativeCallError(f"{self.name}: {message.decode('utf-8', 'replace') if message else 'failed'}")
        results = []
        try:
            for out in outputs[: self.num_outputs]:
                dtype = _dtype_of_code(out.dtype)
                shape = tuple(out.shape[: out.rank])
                result = np.empty(shape, dtype)
                if result.nbytes and out.data:
                    ctypes.memmove(result.__array_interface__["data"][0], out.data, result.nbytes)
                elif result.nbytes:
                    result.fill(0)
                results.append(result)
        finally:
            for out in outputs[: self.num_outputs]:
                self._free(out.data)
        if given_jax:
            results = [_as_jax(r) for r in results]
        if any(impl is not None for impl in self._out_keys):
            import jax

            results = [
                jax.random.wrap_key_data(jax.numpy.asarray(r), impl=impl) if impl is not None else r
                for r, impl in zip(results, self._out_keys + [None] * len(results))
            ]
        if self._out_tree is not None:
            import jax

            return jax.tree_util.tree_unflatten(self._out_tree, results)
        return results[0] if len(results) == 1 else tuple(results)


def in_avals(program: "Program") -> Optional[List[Tuple[Optional[Tuple[int, ...]], Optional[str]]]]:
    """(shape, dtype name) of each input, constants first, from the
    ClosedJaxpr; None where a shape is symbolic or the dtype is not an array's."""
    closed = program.closed
    if closed is None:
        return None
    jaxpr = closed.jaxpr
    out = []
    for v in list(jaxpr.constvars) + list(jaxpr.invars):
        aval = v.aval
        shape = getattr(aval, "shape", None)
        if shape is not None and not all(isinstance(d, int) for d in shape):
            shape = None
        dtype = getattr(aval, "dtype", None)
        name = getattr(dtype, "name", None)
        if name not in DTYPES:  # a PRNG key: its key data has one more axis
            shape, name = None, None
        out.append((shape, name))
    return out
