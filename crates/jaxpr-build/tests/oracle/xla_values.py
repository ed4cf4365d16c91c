"""What the XLA runners of the build tests (`complex/xla_run_values.py`,
`jax_suite/xla_batch.py`) add to the shared oracle (`xla_run.py`, passed in as
a module): complex dtypes, and running a module on one example's inputs."""
import numpy as np
from jax._src.lax import linalg

# The LAPACK handlers jaxlib registers with XLA (`lapack_sgetrf_ffi`, ...)
# find their LAPACK only once initialised: JAX does it when it lowers a
# decomposition, and jax.export before it runs a module made elsewhere
# (`_ensure_backends_initialized`), as these modules are.
linalg.initialize_lapack()


def add_complex_types(oracle):
    oracle.DT.update(complex64=np.complex64, complex128=np.complex128)
    oracle.MLIR_T.update({np.complex64: "complex<f32>", np.complex128: "complex<f64>"})


def execute(oracle, ctx, backend, devs, text, inputs, expected):
    """The results of module `text` specialised to `inputs`' shapes (the
    oracle's `specialise`), compiled and run on `devs`; raises what XLA raises."""
    with ctx:
        m = oracle.specialise(oracle.ir.Module.parse(text), inputs, expected)
        exe = backend.compile_and_load(str(m), devs, oracle.xc.CompileOptions())
    res = exe.execute_sharded([oracle.jax.device_put(x) for x in inputs])
    return [np.asarray(r[0]) for r in res.disassemble_into_single_device_arrays()]
