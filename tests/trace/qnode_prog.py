"""The most common Catalyst program, a `@qjit` QNode on lightning.qubit,
and a classical `@qjit` function (tests/trace.rs, `trace_versions_*`)."""
import jax.numpy as jnp
import pennylane as qml
from catalyst import qjit

dev = qml.device("lightning.qubit", wires=2)


@qjit
@qml.qnode(dev)
def circuit(theta):
    qml.RX(theta, wires=0)
    qml.CNOT(wires=[0, 1])
    return qml.expval(qml.PauliZ(1))


@qjit
def classical(x):
    return jnp.sum(jnp.sin(x) ** 2)


print(circuit(0.5))
print(classical(jnp.arange(3.0)))
