"""Catalyst programs written the way Catalyst's own test suite and documentation write them
(pennylane-catalyst 0.15.0: test_jax_dynamic_api.py, test_measurement_dynamic_shapes.py,
test_mid_circuit_measurement.py, test_adjoint.py, test_gradient.py, test_vmap.py).

PROGRAMS maps a case name to (qjit function, list of example argument tuples).
QUANTUM names the cases that run a circuit."""
from functools import partial

import jax
import numpy as np
import pennylane as qml
from jax import numpy as jnp

import catalyst
from catalyst import adjoint, cond, ctrl, for_loop, grad, measure, value_and_grad, vmap, while_loop

PROGRAMS = {}
QUANTUM = set()
# Programs this Catalyst cannot compile (a feature of a later release): name -> why.
SKIPPED = {}


class NotCompiled:
    """What `qjit` gives for a function this Catalyst rejects when it compiles it."""

    def __init__(self, name, error):
        self.__name__, self.error = name, error


def qjit(fn=None, **options):
    """catalyst.qjit, except that a program Catalyst rejects at decoration (annotated
    arguments compile at once) is kept as a NotCompiled, so the other programs still load."""
    if fn is None:
        return partial(qjit, **options)
    try:
        return catalyst.qjit(fn, **options)
    except Exception as e:  # noqa: BLE001  (any rejection: recorded, reported by gen.py)
        return NotCompiled(fn.__name__, f"{type(e).__name__}: {e}".splitlines()[0][:300])


def _set_shots_by_device(qnode, shots):
    """`qml.set_shots` for PennyLane < 0.42 (Catalyst 0.10's), which has none: the
    same QNode on a device made with those shots, as programs of that time wrote it."""
    device = qml.device(qnode.device.name, wires=qnode.device.wires, shots=shots)
    return qml.QNode(qnode.func, device, diff_method=qnode.diff_method)


set_shots = getattr(qml, "set_shots", _set_shots_by_device)


def case(*examples, quantum=False):
    def register(fn):
        if isinstance(fn, NotCompiled):
            SKIPPED[fn.__name__] = fn.error
            return fn
        PROGRAMS[fn.__name__] = (fn, list(examples))
        if quantum:
            QUANTUM.add(fn.__name__)
        return fn

    return register


# ---------------------------------------------------------------- classical, dynamic shapes


@case((3,), (5,))
@qjit
def ones_of_size(sz: int):
    return jnp.ones([sz], dtype=float)


@case((2,), (4,))
@qjit
def array_and_its_size(sz: int):
    # the returned size is also the array's dimension: out_type must point at the input
    return jnp.ones((sz, 2), dtype=float), sz


@case((np.arange(3.0),), (np.ones(6),))
@qjit(abstracted_axes={0: "n"})
def abstracted_sum(x):
    return jnp.sum(x * 2.0)


@case((np.ones((2, 3)),), (np.arange(12.0).reshape(3, 4),))
@qjit(abstracted_axes={0: "a", 1: "b"})
def two_abstracted_axes(x):
    return jnp.sin(x) + 1.0


@case((np.ones((2, 3)), np.arange(2.0)), (np.ones((4, 1)), np.ones(4)))
@qjit(abstracted_axes=({0: "a", 1: "b"}, {0: "a"}))
def matching_abstracted_axes(x, y):
    return jnp.sum(x, axis=1) + y


@case((3,), (4,))
@qjit
def zeros_plus_arange(sz: int):
    return jnp.zeros([sz], dtype=float) + jnp.arange(sz, dtype=float)


@case((3,), (6,))
@qjit
def forloop_identity(sz: int):
    a = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 2)
    def loop(_, a):
        return a

    return loop(a)


@case((3,), (2,))
@qjit
def forloop_shared_size(sz: int):
    a = jnp.ones([sz], dtype=float)
    b = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 2)
    def loop(_, a, b):
        return (a, b)

    a2, b2 = loop(a, b)
    return a2 + b2


@case((3,), (1,))
@qjit
def forloop_keep_and_grow(sz: int):
    a = jnp.ones([sz, 3], dtype=float)
    b = jnp.ones([sz, 3], dtype=float)

    @for_loop(0, 10, 2, allow_array_resizing=True)
    def loop(_i, a, _b):
        b = jnp.ones([sz + 1, 3], dtype=float)
        return (a, b)

    return loop(a, b)


@case((3,), (5,))
@qjit
def forloop_size_from_index(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 10, 1, allow_array_resizing=True)
    def loop(i, _):
        return jnp.ones([i], dtype=float)

    return loop(a0)


@case((3,), (2,))
@qjit
def forloop_scale_by_size(sz: int):
    a0 = jnp.ones([sz], dtype=float)

    @for_loop(0, 3, 1)
    def loop(_i, a):
        return a * sz

    return loop(a0)


@case((3,), (4,))
@qjit
def forloop_shared_result(sz: int):
    input_a = jnp.ones([sz + 1], dtype=float)
    input_b = jnp.ones([sz + 2], dtype=float)

    @for_loop(0, 10, 1, allow_array_resizing=True)
    def loop(_i, _a, _b):
        return (input_a, input_a)

    return loop(input_b, input_b)


@case((3,), (5,))
@qjit
def whileloop_count(sz: int):
    a = jnp.ones([sz], dtype=float)

    @while_loop(lambda i, _: i < 3)
    def loop(i, a):
        return i + 1, a * 2.0

    _, r = loop(0, a)
    return r


@case((2,), (3,))
@qjit
def whileloop_grow(sz: int):
    a = jnp.zeros([sz], dtype=float)

    @while_loop(lambda a, i: a.shape[0] < 6, allow_array_resizing=True)
    def loop(a, i):
        return jnp.ones([a.shape[0] + 1], dtype=float) * i, i + 1

    r, _ = loop(a, 1)
    return r


@case((3,), (4,))
@qjit
def whileloop_capture(sz: int):
    x = jnp.ones([sz], dtype=float)

    @while_loop(lambda a, i: i < 3)
    def loop(a, i):
        return a + x, i + 1

    r, _ = loop(x, 0)
    return r


@case((3, True), (4, False))
@qjit
def cond_keep_size(sz: int, flag: bool):
    a = jnp.ones([sz], dtype=float)

    @cond(flag)
    def branch():
        return a * 3.0

    @branch.otherwise
    def branch():
        return a + 1.0

    return branch()


@case((3,), (1,))
@qjit
def cond_new_size(sz: int):
    @cond(sz > 2)
    def branch():
        return jnp.ones([sz + 1], dtype=float)

    @branch.otherwise
    def branch():
        return jnp.zeros([sz + 1], dtype=float)

    return branch()


@case((np.arange(4.0), 2), (np.ones(3), 7))
@qjit(abstracted_axes=({0: "n"}, {}))
def dynamic_index_update(x, i: int):
    return x.at[i % x.shape[0]].set(10.0)


@case((np.arange(6.0).reshape(2, 3),), (np.ones((4, 2)),))
@qjit(abstracted_axes={0: "n", 1: "m"})
def reduce_rows(x):
    return jnp.sum(x * x, axis=1), jnp.sum(x, axis=0)


@case((np.array([1.0 + 2.0j, -0.5j, 3.0]),), (np.array([2.0 - 1.0j]),))
@qjit(abstracted_axes={0: "n"})
def complex_parts(z):
    return jnp.real(z) * 2.0, jnp.imag(jnp.conj(z)), jnp.abs(z)


# ---------------------------------------------------------------- quantum

dev2 = qml.device("lightning.qubit", wires=2)
dev3 = qml.device("lightning.qubit", wires=3)


@case((0.3,), (1.2,), quantum=True)
@qjit
@qml.qnode(dev2)
def expval_rx(x: float):
    qml.RX(x, wires=0)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(1))


@case((0.3, 0.7), (1.0, -0.4), quantum=True)
@qjit
@qml.qnode(dev2)
def expval_tensor(x: float, y: float):
    qml.RX(x, wires=0)
    qml.RY(y, wires=1)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(0) @ qml.PauliX(1))


@case((0.5,), (2.0,), quantum=True)
@qjit
@qml.qnode(dev2)
def var_and_expval_hamiltonian(x: float):
    qml.RX(x, wires=0)
    qml.Hadamard(wires=1)
    h = qml.Hamiltonian([0.5, -0.2], [qml.PauliZ(0), qml.PauliX(0) @ qml.PauliX(1)])
    return qml.var(qml.PauliZ(0)), qml.expval(h)


@case((0.4,), (1.5,), quantum=True)
@qjit
@qml.qnode(dev3)
def probs_two_wires(x: float):
    qml.RX(x, wires=0)
    qml.CNOT(wires=[0, 2])
    return qml.probs(wires=[0, 2])


@case((0.4,), (2.5,), quantum=True)
@qjit
@qml.qnode(dev2)
def state_vector(x: float):
    qml.Hadamard(wires=0)
    qml.RY(x, wires=1)
    qml.CZ(wires=[0, 1])
    return qml.state()


@case((0.3,), (3.0,), quantum=True)
@qjit(seed=37)
@partial(set_shots, shots=8)
@qml.qnode(dev2)
def sample_fixed_shots(x: float):
    qml.RX(x, wires=0)
    qml.CNOT(wires=[0, 1])
    return qml.sample()


@case((0.9,), (2.0,), quantum=True)
@qjit(seed=11)
@partial(set_shots, shots=50)
@qml.qnode(dev2)
def counts_fixed_shots(x: float):
    qml.RX(x, wires=0)
    return qml.counts(all_outcomes=True)


@case((5,), (9,), quantum=True)
@qjit(seed=5)
def sample_dynamic_shots(shots: int):
    device = qml.device("lightning.qubit", wires=1)

    @partial(set_shots, shots=shots)
    @qml.qnode(device)
    def circuit():
        qml.RX(1.5, 0)
        return qml.sample()

    return circuit()


@case((20,), (7,), quantum=True)
@qjit(seed=3)
def counts_dynamic_shots(shots: int):
    device = qml.device("lightning.qubit", wires=1)

    @partial(set_shots, shots=shots)
    @qml.qnode(device)
    def circuit():
        qml.RX(1.5, 0)
        return qml.counts(all_outcomes=True)

    return circuit()


@case((3,), (5,), quantum=True)
@qjit
def expval_dynamic_wires(num_qubits: int):
    dev = qml.device("lightning.qubit", wires=num_qubits)

    @qml.qnode(dev)
    def circ():
        @for_loop(0, num_qubits, 1)
        def loop_0(i):
            qml.RY(2.2, wires=i)

        loop_0()
        qml.RX(1.23, wires=num_qubits - 1)
        return qml.expval(qml.Z(wires=num_qubits - 1))

    return circ()


@case((2,), (3,), quantum=True)
@qjit
def probs_dynamic_wires(num_qubits: int):
    dev = qml.device("lightning.qubit", wires=num_qubits)

    @qml.qnode(dev)
    def circ():
        @for_loop(0, num_qubits, 1)
        def loop_0(i):
            qml.RY(0.7, wires=i)

        loop_0()
        return qml.probs()

    return circ()


@case((2,), (3,), quantum=True)
@qjit
def state_dynamic_wires(num_qubits: int):
    dev = qml.device("lightning.qubit", wires=num_qubits)

    @qml.qnode(dev)
    def circ():
        @for_loop(0, num_qubits, 1)
        def loop_0(i):
            qml.Hadamard(wires=i)

        loop_0()
        qml.RZ(0.5, wires=0)
        return qml.state()

    return circ()


@case((2,), (4,), quantum=True)
@qjit(seed=17)
def sample_dynamic_wires(num_qubits: int):
    dev = qml.device("lightning.qubit", wires=num_qubits)

    @partial(set_shots, shots=3)
    @qml.qnode(dev)
    def circ():
        @for_loop(0, num_qubits, 1)
        def loop_0(i):
            qml.RY(0.0, wires=i)

        loop_0()
        qml.PauliX(wires=num_qubits - 1)
        return qml.sample()

    return circ()


@case((0.0,), (np.pi,), quantum=True)
@qjit
@qml.qnode(dev2)
def measure_then_cond(x: float):
    qml.RX(x, wires=0)
    m = measure(wires=0)

    @cond(m)
    def flip():
        qml.PauliX(wires=1)

    flip()
    return qml.expval(qml.PauliZ(1))


@case((np.pi,), (0.0,), quantum=True)
@qjit
@qml.qnode(dev2)
def measure_and_reset(x: float):
    qml.RX(x, wires=0)
    m = measure(wires=0, reset=True)
    return m, qml.expval(qml.PauliZ(0))


@case((0.8,), (2.1,), quantum=True)
@qjit
@qml.qnode(dev3)
def mid_circuit_loop(x: float):
    qml.Hadamard(wires=0)

    @for_loop(1, 3, 1)
    def entangle(i):
        qml.RY(x, wires=i)
        m = measure(wires=i)
        qml.cond(m, qml.PauliX)(wires=0)

    entangle()
    return qml.probs(wires=[0])


@case((0.6,), (1.9,), quantum=True)
@qjit
@qml.qnode(dev2)
def adjoint_rotations(x: float):
    def rotations(theta):
        qml.RX(theta, wires=0)
        qml.RY(theta / 2, wires=1)
        qml.CNOT(wires=[0, 1])

    qml.Hadamard(wires=0)
    adjoint(rotations)(x)
    return qml.state()


@case((0.6,), (1.1,), quantum=True)
@qjit
@qml.qnode(dev3)
def ctrl_rotation(x: float):
    qml.Hadamard(wires=0)
    qml.PauliX(wires=1)
    ctrl(qml.RX, control=[0, 1])(x, wires=2)
    return qml.expval(qml.PauliZ(2))


@case((0.6,), (1.3,), quantum=True)
@qjit
def grad_of_circuit(x: float):
    @qml.qnode(dev2)
    def circuit(x):
        qml.RX(x, wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    return grad(circuit)(x)


@case((0.6,), (1.3,), quantum=True)
@qjit
def value_and_grad_of_circuit(x: float):
    @qml.qnode(dev2, diff_method="parameter-shift")
    def circuit(x):
        qml.RY(x, wires=0)
        return qml.expval(qml.PauliZ(0))

    return value_and_grad(circuit)(x)


@case((np.array([0.1, 0.5, 1.0]),), (np.array([2.0, 0.0]),), quantum=True)
@qjit
def vmap_of_circuit(xs):
    @qml.qnode(dev2)
    def circuit(x):
        qml.RX(x, wires=0)
        return qml.expval(qml.PauliZ(0))

    return vmap(circuit)(xs)


@case((0.3,), (0.9,), quantum=True)
@qjit
@qml.qnode(dev2)
def unitary_gate(x: float):
    u = jnp.array([[jnp.cos(x), -jnp.sin(x)], [jnp.sin(x), jnp.cos(x)]], dtype=complex)
    qml.QubitUnitary(u, wires=0)
    return qml.expval(qml.PauliZ(0)), qml.state()


@case((4,), (2,), quantum=True)
@qjit
@qml.qnode(dev2)
def qubits_in_while(n: int):
    @while_loop(lambda i: i < n)
    def loop(i):
        qml.RX(0.25, wires=0)
        return i + 1

    loop(0)
    return qml.probs(wires=[0, 1])


# ---------------------------------------------------------------- quantum, native build set
# More circuits in the manner of Catalyst's tests (test_measurements_results.py,
# test_mid_circuit_measurement.py, test_adjoint.py, test_ctrl.py, test_dynamic_qubit_allocation.py,
# test_measurements_shots_results.py, the demos), which `jaxpr build --emit native` is held to.

dev1 = qml.device("lightning.qubit", wires=1)
dev4 = qml.device("lightning.qubit", wires=4)


@case((0.4, 1.1), (2.0, -0.3), quantum=True)
@qjit
@qml.qnode(dev2)
def expval_paulis(x: float, y: float):
    qml.RX(x, wires=0)
    qml.RY(y, wires=1)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliX(0)), qml.expval(qml.PauliY(1)), qml.expval(qml.Hadamard(0))


@case((0.7,), (1.9,), quantum=True)
@qjit
@qml.qnode(dev2)
def var_of_tensor(x: float):
    qml.RX(x, wires=0)
    qml.Hadamard(wires=1)
    qml.CZ(wires=[0, 1])
    return qml.var(qml.PauliZ(0) @ qml.PauliX(1)), qml.var(qml.PauliY(0))


@case((0.3, 0.8, 1.4), (2.2, -1.0, 0.5), quantum=True)
@qjit
@qml.qnode(dev3)
def rotations_and_entanglers(a: float, b: float, c: float):
    qml.Rot(a, b, c, wires=0)
    qml.PhaseShift(b, wires=1)
    qml.Hadamard(wires=2)
    qml.IsingXX(a, wires=[0, 1])
    qml.IsingYY(b, wires=[1, 2])
    qml.IsingZZ(c, wires=[0, 2])
    qml.CRX(a, wires=[2, 0])
    qml.CRY(b, wires=[0, 1])
    qml.CRZ(c, wires=[1, 2])
    qml.CRot(a, b, c, wires=[0, 2])
    return qml.state()


@case((0.5,), (1.7,), quantum=True)
@qjit
@qml.qnode(dev4)
def multi_qubit_gates(x: float):
    for w in range(4):
        qml.Hadamard(wires=w)
    qml.Toffoli(wires=[0, 1, 2])
    qml.CSWAP(wires=[3, 0, 1])
    qml.MultiRZ(x, wires=[0, 1, 2, 3])
    qml.DoubleExcitation(x, wires=[0, 1, 2, 3])
    qml.SingleExcitation(x / 2, wires=[1, 2])
    qml.SWAP(wires=[0, 3])
    qml.ISWAP(wires=[1, 2])
    qml.S(wires=0)
    qml.T(wires=1)
    return qml.probs(wires=[0, 1, 2, 3])


@case((0.6,), (2.4,), quantum=True)
@qjit
@qml.qnode(dev2)
def hermitian_observable(x: float):
    qml.RY(x, wires=0)
    qml.CNOT(wires=[0, 1])
    h = np.array([[1.0, 0.5j], [-0.5j, -1.0]])
    return qml.expval(qml.Hermitian(h, wires=1)), qml.var(qml.Hermitian(h, wires=0))


@case((0.2, 0.9), (1.3, 2.6), quantum=True)
@qjit
@qml.qnode(dev3)
def hamiltonian_expval(x: float, y: float):
    qml.RX(x, wires=0)
    qml.RY(y, wires=1)
    qml.CNOT(wires=[1, 2])
    h = qml.Hamiltonian(
        [0.3, -1.2, 0.7, 2.0],
        [qml.PauliZ(0), qml.PauliX(1) @ qml.PauliZ(2), qml.PauliY(0) @ qml.PauliY(1), qml.Identity(2)],
    )
    return qml.expval(h)


@case((np.array([0.1, -0.4, 0.9]),), (np.array([1.5, 0.0, -2.0]),), quantum=True)
@qjit
@qml.qnode(dev3)
def hamiltonian_with_traced_coeffs(coeffs):
    qml.Hadamard(wires=0)
    qml.CNOT(wires=[0, 1])
    qml.RY(0.4, wires=2)
    h = qml.Hamiltonian(coeffs, [qml.PauliZ(0) @ qml.PauliZ(1), qml.PauliX(2), qml.PauliZ(2)])
    return qml.expval(h)


@case((0.8,), (2.9,), quantum=True)
@qjit
@qml.qnode(dev2)
def measure_postselect_one(x: float):
    qml.RX(x, wires=0)
    qml.CNOT(wires=[0, 1])
    m = measure(wires=0, postselect=1)
    return m, qml.expval(qml.PauliZ(1))


@case((1.2,), (0.4,), quantum=True)
@qjit
@qml.qnode(dev2)
def measure_postselect_zero_reset(x: float):
    qml.RY(x, wires=0)
    qml.CNOT(wires=[0, 1])
    m = measure(wires=1, postselect=0, reset=True)
    return m, qml.probs(wires=[0, 1])


@case((0.5,), (2.5,), quantum=True)
@qjit(seed=23)
@qml.qnode(dev2)
def measure_seeded(x: float):
    qml.RX(x, wires=0)
    m0 = measure(wires=0)
    qml.Hadamard(wires=1)
    m1 = measure(wires=1)
    return m0, m1


@case((0.3,), (1.2,), quantum=True)
@qjit
@qml.qnode(dev3)
def adjoint_of_loop(x: float):
    def layer(theta):
        @for_loop(0, 3, 1)
        def body(i):
            qml.RX(theta * (i + 1), wires=i)
            qml.CNOT(wires=[i, (i + 1) % 3])

        body()

    qml.Hadamard(wires=0)
    layer(x)
    adjoint(layer)(x)
    return qml.state()


@case((0.7,), (1.6,), quantum=True)
@qjit
@qml.qnode(dev2)
def adjoint_nested(x: float):
    def inner(theta):
        qml.RY(theta, wires=0)
        qml.S(wires=1)

    def outer(theta):
        adjoint(inner)(theta)
        qml.CRX(theta, wires=[0, 1])
        qml.T(wires=0)

    qml.Hadamard(wires=1)
    adjoint(outer)(x)
    return qml.state()


@case((0.9,), (2.3,), quantum=True)
@qjit
@qml.qnode(dev3)
def ctrl_of_function(x: float):
    def block(theta):
        qml.RY(theta, wires=1)
        qml.PauliZ(wires=2)
        qml.RZ(theta / 3, wires=2)

    qml.Hadamard(wires=0)
    qml.RX(x, wires=2)
    ctrl(block, control=0)(x)
    ctrl(qml.PauliX, control=[0, 1], control_values=[True, False])(wires=2)
    return qml.probs(wires=[0, 1, 2])


@case((0.4,), (1.8,), quantum=True)
@qjit
@qml.qnode(dev2)
def global_phase_controlled(x: float):
    qml.Hadamard(wires=0)
    ctrl(qml.GlobalPhase, control=0)(x, wires=1)
    qml.GlobalPhase(x / 2)
    return qml.state()


@case((0.6,), (1.4,), quantum=True)
@qjit
@qml.qnode(dev2)
def adjoint_unitary(x: float):
    u = jnp.array([[jnp.cos(x), -1j * jnp.sin(x)], [-1j * jnp.sin(x), jnp.cos(x)]], dtype=complex)
    qml.Hadamard(wires=1)
    qml.QubitUnitary(u, wires=0)
    adjoint(qml.QubitUnitary)(u, wires=1)
    ctrl(qml.QubitUnitary, control=0)(u, wires=1)
    return qml.state()


@case((3,), (4,), quantum=True)
@qjit
def ghz_dynamic_wires(n: int):
    dev = qml.device("lightning.qubit", wires=n)

    @qml.qnode(dev)
    def circuit():
        qml.Hadamard(wires=0)

        @for_loop(1, n, 1)
        def chain(i):
            qml.CNOT(wires=[i - 1, i])

        chain()
        return qml.probs()

    return circuit()


@case((0.5,), (1.9,), quantum=True)
@qjit(seed=5)
@qml.qnode(dev3)
def cond_on_measurements(x: float):
    qml.RY(x, wires=0)
    qml.RY(2 * x, wires=1)
    m0 = measure(wires=0, postselect=1)
    m1 = measure(wires=1)

    @cond(m1)
    def branch():
        qml.RX(x, wires=2)

    @branch.otherwise
    def branch():
        qml.Hadamard(wires=2)

    branch()
    return m0, m1, qml.expval(qml.PauliZ(2))


@case((0.25, 5), (0.6, 2), quantum=True)
@qjit
@qml.qnode(dev2)
def while_with_measure(x: float, n: int):
    @while_loop(lambda i, acc: i < n)
    def loop(i, acc):
        qml.RX(x, wires=0)
        qml.CNOT(wires=[0, 1])
        return i + 1, acc + x

    _, total = loop(0, 0.0)
    qml.RZ(total, wires=1)
    return qml.expval(qml.PauliX(1)), total


@case((np.array([0.2, 1.1, 2.0]),), (np.array([0.0, 3.0, -0.5]),), quantum=True)
@qjit
def classical_around_circuit(xs):
    @qml.qnode(dev2)
    def circuit(a, b):
        qml.RX(a, wires=0)
        qml.RY(b, wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(1))

    a = jnp.sum(xs) / 2
    b = jnp.prod(jnp.cos(xs))
    return circuit(a, b) * 3.0 + jnp.max(xs)


@case((np.array([0.3, 1.2, 2.1, -0.7]),), (np.array([0.0, 0.5, 1.5, 3.0]),), quantum=True)
@qjit
def vmap_state(xs):
    @qml.qnode(dev1)
    def circuit(x):
        qml.RY(x, wires=0)
        qml.PhaseShift(x / 2, wires=0)
        return qml.probs(wires=0)

    return vmap(circuit)(xs)


@case((0.9,), (2.2,), quantum=True)
@qjit(seed=41)
@partial(qml.set_shots, shots=20)
@qml.qnode(dev3)
def sample_subset_seeded(x: float):
    qml.RX(x, wires=0)
    qml.Hadamard(wires=1)
    qml.CNOT(wires=[0, 2])
    return qml.sample(wires=[0, 2])


@case((0.7,), (1.5,), quantum=True)
@qjit(seed=8)
@partial(qml.set_shots, shots=100)
@qml.qnode(dev2)
def counts_and_expval_shots(x: float):
    qml.RY(x, wires=0)
    qml.CNOT(wires=[0, 1])
    return qml.counts(wires=[0, 1], all_outcomes=True), qml.expval(qml.PauliZ(0))


@case((0.4,), (2.0,), quantum=True)
@qjit(seed=99)
@partial(qml.set_shots, shots=30)
@qml.qnode(dev3)
def sample_after_controlled_gates(x: float):
    qml.Hadamard(wires=0)
    ctrl(qml.RY, control=0)(x, wires=1)
    qml.Toffoli(wires=[0, 1, 2])
    return qml.sample()


@case((2, 0.5), (3, 1.1), quantum=True)
@qjit
def dynamic_register_expval(n: int, x: float):
    dev = qml.device("lightning.qubit", wires=n)

    @qml.qnode(dev)
    def circuit():
        @for_loop(0, n, 1)
        def layer(i):
            qml.RX(x * (i + 1), wires=i)

        layer()
        return qml.state()

    return circuit()


# ------------------------------------------- measurements of mid-circuit measurement results
# With program capture, `qml.expval(m)` of a mid-circuit measurement `m` is Catalyst's `mcmobs`,
# which it compiles only in a kernel run one shot at a time (shots, mcm_method="one-shot": the
# `dynamic-one-shot` pass of the kernel's device pipeline), as test_mid_circuit_measurement.py's
# one-shot tests write them.


@case((0.9,), (2.2,), quantum=True)
@qjit(seed=11, capture=True)
@partial(qml.set_shots, shots=200)
@qml.qnode(dev2, mcm_method="one-shot")
def mcm_expval_one_shot(x: float):
    qml.RX(x, wires=0)
    m = qml.measure(0)
    return qml.expval(m)


@case((1.3,), (0.4,), quantum=True)
@qjit(seed=7, capture=True)
@partial(qml.set_shots, shots=150)
@qml.qnode(dev2, mcm_method="one-shot")
def mcm_var_and_probs_one_shot(x: float):
    qml.RY(x, wires=0)
    m0 = qml.measure(0)
    qml.Hadamard(1)
    m1 = qml.measure(1)
    return qml.var(m0), qml.probs(op=[m0, m1]), qml.expval(qml.PauliZ(0))


@case((2.0,), (0.7,), quantum=True)
@qjit(seed=5, capture=True)
@partial(qml.set_shots, shots=100)
@qml.qnode(dev2, mcm_method="one-shot")
def mcm_counts_one_shot(x: float):
    qml.RX(x, wires=0)
    m0 = qml.measure(0)
    qml.cond(m0, qml.PauliX)(wires=1)
    return qml.counts(m0), qml.probs(wires=[1])


# Gradients of circuits, written as test_gradient.py writes them: grad, value_and_grad and
# jacobian, argnums, the QNode's diff_method (best = adjoint on Lightning, adjoint,
# parameter-shift) and grad's method="fd", classical pre- and post-processing, a gate in a
# for_loop.
@case((0.4, 1.1), (-0.8, 2.5), quantum=True)
@qjit
def grad_argnums_adjoint(x: float, y: float):
    @qml.qnode(dev2, diff_method="adjoint")
    def circuit(x, y):
        qml.RX(x, wires=0)
        qml.RY(y, wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    return grad(circuit, argnums=[0, 1])(x, y)


@case((0.7,), (-1.9,), quantum=True)
@qjit
def grad_classical_pre_and_post(x: float):
    # Catalyst 0.15.0 crashes (LLVM, signal 11) on classical code between grad and the
    # QNode's arguments: the pre-processing is inside the QNode, as the gate's angle.
    @qml.qnode(dev2)
    def circuit(a):
        qml.RX(jnp.sin(a) * 2.0, wires=0)
        qml.RY(a * a, wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    def cost(x):
        return circuit(x) ** 2 + 3.0 * x

    return grad(cost)(x)


@case((0.3,), (1.4,), quantum=True)
@qjit
def grad_gate_in_for_loop(x: float):
    @qml.qnode(dev3)
    def circuit(x):
        @for_loop(0, 3, 1)
        def layer(i):
            qml.RX(x * (i + 1), wires=i)
            qml.CNOT(wires=[i, (i + 1) % 3])

        layer()
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(2))

    return grad(circuit)(x)


@case((np.array([0.2, -0.5, 1.3]),), (np.array([1.0, 2.0, 0.1]),), quantum=True)
@qjit
def jacobian_two_expvals(params):
    @qml.qnode(dev2)
    def circuit(p):
        qml.RX(p[0], wires=0)
        qml.RY(p[1], wires=1)
        qml.CRX(p[2], wires=[0, 1])
        return qml.expval(qml.PauliZ(0)), qml.expval(qml.PauliY(1))

    return catalyst.jacobian(circuit)(params)


@case((np.array([0.2, -0.5]),), (np.array([1.1, 0.6]),), quantum=True)
@qjit
def value_and_grad_vector_adjoint(params):
    @qml.qnode(dev2, diff_method="adjoint")
    def circuit(p):
        qml.Rot(p[0], p[1], 0.3, wires=0)
        qml.IsingXX(p[0] * p[1], wires=[0, 1])
        return qml.expval(qml.PauliX(0) @ qml.PauliZ(1))

    def cost(p):
        return jnp.sum(p * p) * circuit(p)

    return value_and_grad(cost)(params)


@case((0.5,), (2.1,), quantum=True)
@qjit
def grad_fd_of_circuit(x: float):
    @qml.qnode(dev2)
    def circuit(x):
        qml.RX(x, wires=0)
        qml.RY(x / 2, wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    return grad(circuit, method="fd", h=1e-6)(x)


@case((0.5,), (-1.2,), quantum=True)
@qjit
def jacobian_fd_probs(x: float):
    @qml.qnode(dev2)
    def circuit(x):
        qml.RY(x, wires=0)
        qml.CNOT(wires=[0, 1])
        return qml.probs(wires=[0, 1])

    return catalyst.jacobian(circuit, method="fd")(x)


@case((0.9, 0.2), (-0.4, 1.7), quantum=True)
@qjit
def grad_hamiltonian_best(x: float, y: float):
    @qml.qnode(dev2)
    def circuit(x, y):
        qml.Hadamard(wires=0)
        qml.RZ(x, wires=0)
        qml.IsingZZ(y, wires=[0, 1])
        qml.RX(x - y, wires=1)
        return qml.expval(0.5 * qml.PauliX(0) + 0.25 * qml.PauliZ(0) @ qml.PauliY(1))

    return grad(circuit, argnums=1)(x, y)


@case((0.4,), (1.6,), quantum=True)
@qjit
def jacobian_probs_parameter_shift(x: float):
    @qml.qnode(dev2, diff_method="parameter-shift")
    def circuit(x):
        qml.RX(x, wires=0)
        return qml.probs(wires=0)

    return catalyst.jacobian(circuit)(x)


@case((0.7,), (-1.3,))
@qjit
def grad_classical_function(x: float):
    def f(x):
        return jnp.sin(x) * x**2 + jnp.exp(x / 3.0) - jnp.log(x * x + 1.0)

    return value_and_grad(f)(x)


# Parameter-shift (diff_method="parameter-shift"): Catalyst shifts each executed gate parameter
# by +-pi/2 and runs the circuit again for each (mlir/lib/Gradient/Transforms/GradMethods/
# PS_*.cpp), then contracts with the classical Jacobian of the gate parameters.
@case((0.4, 1.1), (-0.8, 2.5), quantum=True)
@qjit
def grad_parameter_shift_argnums(x: float, y: float):
    @qml.qnode(dev2, diff_method="parameter-shift")
    def circuit(x, y):
        qml.Rot(x, y * 2.0, x - y, wires=0)
        qml.RY(y, wires=1)
        qml.CNOT(wires=[0, 1])
        qml.IsingZZ(x * y, wires=[0, 1])
        return qml.expval(qml.PauliZ(1) @ qml.PauliX(0))

    return grad(circuit, argnums=[0, 1])(x, y)


@case((np.array([0.3, -0.7]),), (np.array([1.2, 0.5]),), quantum=True)
@qjit
def jacobian_probs_classical_parameter_shift(params):
    @qml.qnode(dev2, diff_method="parameter-shift")
    def circuit(p):
        qml.RX(jnp.sin(p[0]) * 2.0, wires=0)
        qml.RY(p[0] * p[1], wires=1)
        qml.CNOT(wires=[0, 1])
        qml.PhaseShift(p[1] ** 2, wires=1)
        qml.Hadamard(wires=1)
        return qml.probs(wires=[0, 1])

    return catalyst.jacobian(circuit)(params)


@case((0.3,), (1.4,), quantum=True)
@qjit
def value_and_grad_parameter_shift_loop(x: float):
    @qml.qnode(dev3, diff_method="parameter-shift")
    def circuit(x):
        @for_loop(0, 3, 1)
        def layer(i):
            qml.RX(x * (i + 1), wires=i)
            qml.CNOT(wires=[i, (i + 1) % 3])

        layer()
        return qml.expval(qml.PauliZ(0) @ qml.PauliZ(2)), qml.expval(qml.PauliY(1))

    def cost(x):
        a, b = circuit(x)
        return a + 2.0 * b

    return value_and_grad(cost)(x)


# Derivatives through control flow: gates with differentiated parameters in cond and for_loop
# regions of the circuit, and classical processing in loops carrying differentiated values (inside
# the QNode, as grad_classical_pre_and_post says why). A gate with a differentiated parameter in a
# while_loop Catalyst refuses (by either method; refused.py prints those programs).
@case((0.3,), (1.2,), quantum=True)
@qjit
def grad_gate_in_cond(x: float):
    @qml.qnode(dev2)
    def circuit(x):
        qml.RY(x, wires=0)

        @cond(x > 0.5)
        def branch():
            qml.RX(x * 2.0, wires=1)

        @branch.otherwise
        def branch():
            qml.RZ(x, wires=0)
            qml.RY(x * x, wires=1)

        branch()
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    return grad(circuit)(x)


@case((0.3,), (1.2,), quantum=True)
@qjit
def grad_gate_in_cond_parameter_shift(x: float):
    @qml.qnode(dev2, diff_method="parameter-shift")
    def circuit(x):
        qml.RY(x, wires=0)

        @cond(x > 0.5)
        def branch():
            qml.RX(x * 2.0, wires=1)

        @branch.otherwise
        def branch():
            qml.RZ(x, wires=0)
            qml.RY(x * x, wires=1)

        branch()
        qml.CNOT(wires=[0, 1])
        return qml.probs(wires=[1])

    return catalyst.jacobian(circuit)(x)


@case((0.5,), (-0.9,), quantum=True)
@qjit
def grad_angle_carried_by_for_loop(x: float):
    @qml.qnode(dev2)
    def circuit(x):
        @for_loop(0, 3, 1)
        def angle(i, a):
            return a * 0.5 + jnp.sin(x) * (i + 1)

        a = angle(x)
        qml.RX(a, wires=0)
        qml.RY(a * x, wires=1)
        qml.CNOT(wires=[0, 1])
        return qml.expval(qml.PauliZ(1))

    return grad(circuit)(x)


@case((0.5,), (-0.9,), quantum=True)
@qjit
def grad_angle_carried_by_while_loop(x: float):
    @qml.qnode(dev2, diff_method="parameter-shift")
    def circuit(x):
        @while_loop(lambda a, i: i < 3)
        def angle(a, i):
            return a * 0.5 + x * x, i + 1

        a, _ = angle(x, 0)
        qml.RX(a, wires=0)
        return qml.expval(qml.PauliZ(0))

    return grad(circuit)(x)


@case((0.7,), (-1.3,))
@qjit
def grad_classical_loops(x: float):
    def f(x):
        @for_loop(0, 4, 1)
        def body(i, acc):
            return acc * jnp.cos(x) + x / (i + 1)

        @while_loop(lambda a, i: i < 3)
        def twice(a, i):
            return jnp.sin(a) + a * x, i + 1

        a, _ = twice(body(x), 0)
        return a * a

    return value_and_grad(f)(x)


# Classical derivatives over arrays, as Catalyst's test_gradient.py writes them: Catalyst
# differentiates these with Enzyme; the tool rewrites them into forward-mode jaxprs
# (crates/lower/src/differentiate.rs) that both back ends build.
@case((np.array([0.3, -1.2, 2.0]),), (np.array([1.5, 0.25, -0.6]),))
@qjit
def grad_classical_vector(x):
    def f(x):
        return jnp.sum(jnp.tanh(x) * jnp.sqrt(x * x + 1.0)) / jnp.sum(x * x + 2.0)

    return grad(f)(x)


@case((np.array([0.3, -1.2]),), (np.array([1.5, 0.25]),))
@qjit
def jacobian_classical_matrix(x):
    def f(x):
        w = jnp.array([[1.0, -2.0], [0.5, 3.0], [2.5, 0.1]])
        return jnp.exp(w @ x) * 0.5

    return catalyst.jacobian(f)(x)


@case((np.array([[0.3, -1.2], [0.9, 0.4]]),), (np.array([[1.5, 0.25], [-0.6, 2.2]]),))
@qjit
def jacobian_classical_matrix_input(a):
    def f(a):
        return jnp.stack([jnp.sum(a @ a.T), jnp.sum(jnp.cos(a[0]) ** 2), a[1, 0] ** 3])

    return catalyst.jacobian(f)(a)


@case((0.7, np.array([1.0, 2.0])), (-1.3, np.array([0.5, -0.25])))
@qjit
def grad_classical_argnums(x: float, v):
    def f(x, v):
        return jnp.sum(jnp.sin(x * v) + jnp.log1p(v * v)) * x

    return grad(f, argnums=[0, 1])(x, v)


@case((0.7,), (-1.3,))
@qjit
def grad_classical_fd(x: float):
    def f(x):
        return jnp.sin(x) ** 2 + jnp.cos(3.0 * x)

    return grad(f, method="fd", h=1e-6)(x)


@case((0.7,), (2.1,))
@qjit
def grad_classical_cond(x: float):
    def f(x):
        @cond(x > 1.0)
        def branch():
            return x * x * jnp.exp(-x)

        @branch.otherwise
        def branch():
            return jnp.tanh(x) / (1.0 + x * x)

        return branch() + x

    return value_and_grad(f)(x)


@case((np.array([0.3, -0.4]),), (np.array([1.1, 0.2]),))
@qjit
def grad_classical_loop_carrying_array(x):
    def f(x):
        @for_loop(0, 3, 1)
        def body(i, acc):
            return jax.nn.sigmoid(acc) * x + jnp.float64(i)

        @while_loop(lambda a, k: k < 2)
        def more(a, k):
            return a * jnp.sum(x) - jnp.expm1(a) * 0.1, k + 1

        a, _ = more(body(x), 0)
        return jnp.sum(a ** 2)

    return value_and_grad(f)(x)


@case((0.7, 1.9), (1.3, 0.6))
@qjit
def grad_classical_power_and_division(x: float, y: float):
    def f(x, y):
        return x**y + y / (x + 2.0) - jnp.square(x - y) + 1.0 / jnp.sqrt(x * x + y)

    return grad(f, argnums=[0, 1])(x, y)


@case((np.array([0.3, -1.2, 2.0]),), (np.array([1.5, 0.25, -0.6]),))
@qjit
def jacobian_classical_slices_and_concat(x):
    def f(x):
        y = jnp.concatenate([x[1:] * 2.0, jnp.flip(x), jnp.maximum(x, 0.5)[:1]])
        return jnp.where(y > 0.0, y * y, -y) + jnp.cumsum(x)[-1]

    return catalyst.jacobian(f)(x)
