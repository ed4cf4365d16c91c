"""Writes tests/data/catalyst-refused/: programs pennylane-catalyst 0.15.0 traces (and prints as
a jaxpr) but refuses to compile, with the error it gives, for the native build's refusals to be
tested against. Each NAME.jaxpr is the jaxpr qjit traced; NAME.error the first line of Catalyst's
compile error.

usage: python refused.py OUTDIR   (the venv of tests/trace/venv.sh catalyst)
"""
import os
import sys

import pennylane as qml

import catalyst
from catalyst import grad, while_loop

dev2 = qml.device("lightning.qubit", wires=2)


def gate_in_while_loop(diff_method):
    """A gate whose angle is differentiated, in a while_loop: Catalyst's gradient pass fails
    ("cloned during the gradient pass is not free of quantum ops") by either method."""

    def grad_gate_in_while_loop(x, n):
        @qml.qnode(dev2, diff_method=diff_method)
        def circuit(x, n):
            @while_loop(lambda i: i < n)
            def loop(i):
                qml.RX(x * (i + 1), wires=0)
                qml.CNOT(wires=[0, 1])
                return i + 1

            loop(0)
            return qml.expval(qml.PauliZ(1))

        return grad(circuit, argnums=0)(x, n)

    return grad_gate_in_while_loop


PROGRAMS = {
    "grad_gate_in_while_loop_adjoint": (gate_in_while_loop("adjoint"), (0.4, 3)),
    "grad_gate_in_while_loop_parameter_shift": (gate_in_while_loop("parameter-shift"), (0.4, 3)),
}

if __name__ == "__main__":
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, (fn, args) in PROGRAMS.items():
        q = catalyst.qjit(fn)
        try:
            q(*args)
        except Exception as e:  # noqa: BLE001  (the refusal is what is recorded)
            error = f"{type(e).__name__}: {e}".splitlines()[0]
        else:
            sys.exit(f"{name}: Catalyst compiled it; it belongs in programs.py")
        with open(os.path.join(out, name + ".jaxpr"), "w") as f:
            f.write(str(q.jaxpr) + "\n")
        with open(os.path.join(out, name + ".error"), "w") as f:
            f.write(error + "\n")
        print(name, "refused:", error)
