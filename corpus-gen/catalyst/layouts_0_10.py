"""Catalyst 0.10's own gate layouts, printed and computed by pennylane-catalyst 0.10.0.

The version matrix's 0.10 column (`gen.py` run by 0.10) has no global phase and no gate
whose angles are constants outside a loop; Catalyst 0.10 prints those in layouts no later
release prints (`_gphase_lowering`, `bind_flexible_primitive`):

- `gphase[ctrl_len=1] q True x`: control qubits, control values, then the phase;
- `gphase[static_params=[0.7]]`, `qinst[... static_params=[0.25]] q`: constant parameters as a
  parameter of the equation, and no parameter operand.

Writes `NAME.jaxpr` and `NAME.json` (`quantum`, `examples`: arguments, the jaxpr's inputs,
the values Catalyst computed) into the folder given, in the suite's format.

    tests/trace/venv.sh catalyst 0.10.0   # prints the python to run this with
    PY corpus-gen/catalyst/layouts_0_10.py tests/data/catalyst-0.10-layouts
"""

import json
import os
import sys

import jax
import numpy as np
import pennylane as qml

import catalyst
from catalyst import qjit

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import encode  # noqa: E402

dev = qml.device("lightning.qubit", wires=2)


@qjit
@qml.qnode(dev)
def global_phases(x: float):
    qml.Hadamard(wires=0)
    qml.ctrl(qml.GlobalPhase(x), control=0)
    qml.ctrl(qml.GlobalPhase(0.3), control=0)
    qml.GlobalPhase(0.7)
    qml.GlobalPhase(x / 2)
    qml.RX(0.25, wires=1)
    qml.ctrl(qml.RY(0.4, wires=1), control=0, control_values=False)
    qml.ctrl(qml.RZ(x, wires=1), control=0)
    return qml.state()


@qjit
def grad_past_static_gates(x: float):
    @qml.qnode(dev, diff_method="parameter-shift")
    def circuit(x):
        qml.RY(0.5, wires=0)
        qml.RX(x, wires=0)
        qml.CNOT(wires=[0, 1])
        qml.RZ(0.3, wires=1)
        qml.RX(x * 2, wires=1)
        return qml.expval(qml.PauliZ(1))

    return catalyst.grad(circuit)(x)


PROGRAMS = {
    "global_phases": (global_phases, [(0.4,), (1.3,)]),
    "grad_past_static_gates": (grad_past_static_gates, [(0.6,), (2.0,)]),
}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    producer = f"pennylane-catalyst {catalyst.__version__} (jax {jax.__version__})"
    for name, (fn, examples) in PROGRAMS.items():
        exs = []
        for args in examples:
            res = fn(*args)
            encoded = [encode.array(np.asarray(a)) for a in args]
            exs.append({"args": encoded, "inputs": encoded,
                        "outputs": [encode.array(o) for o in jax.tree_util.tree_leaves(res)]})
        with open(f"{out}/{name}.jaxpr", "w") as f:
            f.write(str(fn.jaxpr) + "\n")
        meta = {"producer": producer, "program": f"corpus-gen/catalyst/layouts_0_10.py:{name}",
                "quantum": True, "consts": [encode.array(np.asarray(c)) for c in fn.jaxpr.consts],
                "examples": exs}
        with open(f"{out}/{name}.json", "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        print(name, "ok", flush=True)


if __name__ == "__main__":
    main()
