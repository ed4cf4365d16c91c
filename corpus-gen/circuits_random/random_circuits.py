"""Differential testing of quantum builds against Catalyst (pennylane-catalyst 0.15.0).

Each seed makes one random program: a QNode on `lightning.qubit` over 1-4 wires with gates drawn
from every family Catalyst 0.15 compiles (named gates with and without parameters, `QubitUnitary`
with real and complex matrices, constant and computed from the arguments, `MultiRZ`, `PauliRot`,
`GlobalPhase`, state preparation), their `adjoint` and `ctrl` forms (control values included),
mid-circuit measurements (reset, postselection) and `qml.cond` on them, `qml.cond` on the
arguments, `for_loop`s and `while_loop`s over gates; it returns a random set of measurements
(`expval`/`var` of named, tensor, Hermitian and Hamiltonian observables, `probs`, `state`, and with
shots and a seed `sample` and `counts`). A third of the programs differentiate the circuit
(`grad`, `value_and_grad`, `jacobian`, with `argnums`) under a random `diff_method` (`adjoint`,
`parameter-shift`, `best`, which Catalyst resolves) or by finite differences (`method="fd"`: Catalyst
takes finite differences there, not as a QNode's `diff_method`).

Catalyst judges: the program is run by `qjit`, and its jaxpr, arguments and values are written as
the Catalyst suite's cases are (`corpus-gen/catalyst/record.py`), with the program's source in
the case's `source`. A program Catalyst refuses is listed with Catalyst's error in
OUTDIR/refused.json and is not a case: the native build must give Catalyst's values on every case
(`crates/jaxpr-build/tests/quantum.rs`, `random_circuits_compute_catalysts_values`).

    PY=$(bash tests/trace/venv.sh catalyst)
    # the full run (the folder is scratch), then its judgement by a native build of each case
    $PY corpus-gen/circuits_random/random_circuits.py run 2000 /tmp/circuits-run
    JAXPR_RANDOM_CIRCUITS=/tmp/circuits-run cargo test --release -p jaxpr-build --test quantum random_circuits
    # the committed sample (fixed seeds, and FOUND: full runs' seeds that found a disagreement)
    $PY corpus-gen/circuits_random/random_circuits.py sample 120 tests/data/circuits-random
    # one program's source
    $PY corpus-gen/circuits_random/random_circuits.py show SEED
"""
import json
import os
import random as pyrandom
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "catalyst"))
import record  # noqa: E402  (patches qjit before any program is decorated)

import catalyst  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import pennylane as qml  # noqa: E402

SAMPLE_BASE = 0  # the committed sample's seeds: SAMPLE_BASE + i
RUN_BASE = 3_000_000  # the full run's seeds
# Seeds of full runs whose circuits found a disagreement, kept in the committed sample (a
# controlled global phase whose control value JAX's printer wrapped onto a line of its own).
FOUND = [3000066, 3000092, 3000298, 3000904, 3001012, 3001627]

# Gates by (name, number of parameters, number of wires).
GATES = [
    ("Identity", 0, 1), ("PauliX", 0, 1), ("PauliY", 0, 1), ("PauliZ", 0, 1), ("Hadamard", 0, 1),
    ("S", 0, 1), ("T", 0, 1), ("SX", 0, 1),
    ("RX", 1, 1), ("RY", 1, 1), ("RZ", 1, 1), ("PhaseShift", 1, 1), ("Rot", 3, 1),
    ("U1", 1, 1), ("U2", 2, 1), ("U3", 3, 1),
    ("CNOT", 0, 2), ("CY", 0, 2), ("CZ", 0, 2), ("CH", 0, 2), ("SWAP", 0, 2), ("ISWAP", 0, 2),
    ("SISWAP", 0, 2), ("ECR", 0, 2),
    ("IsingXX", 1, 2), ("IsingYY", 1, 2), ("IsingZZ", 1, 2), ("IsingXY", 1, 2),
    ("ControlledPhaseShift", 1, 2), ("CRX", 1, 2), ("CRY", 1, 2), ("CRZ", 1, 2), ("CRot", 3, 2),
    ("SingleExcitation", 1, 2), ("SingleExcitationPlus", 1, 2), ("SingleExcitationMinus", 1, 2),
    ("PSWAP", 1, 2),
    ("Toffoli", 0, 3), ("CSWAP", 0, 3), ("CCZ", 0, 3),
    ("DoubleExcitation", 1, 4), ("OrbitalRotation", 1, 4),
]
# Named observables (`Identity` last: it needs no wire of its own).
NAMED_OBS = ["PauliX", "PauliY", "PauliZ", "Hadamard", "Identity"]


def random_unitary(rng, n, real):
    """A random `n`x`n` unitary (orthogonal when `real`), as a Python literal."""
    g = np.random.default_rng(rng.randrange(2**32))
    a = g.normal(size=(n, n)) if real else g.normal(size=(n, n)) + 1j * g.normal(size=(n, n))
    q, r = np.linalg.qr(a)
    q = q * (np.diag(r) / np.abs(np.diag(r)))
    return literal(q)


def random_hermitian(rng, n):
    g = np.random.default_rng(rng.randrange(2**32))
    a = g.normal(size=(n, n)) + 1j * g.normal(size=(n, n))
    if rng.random() < 0.4:
        a = a.real + 0j
    return literal((a + a.conj().T) / 2)


def literal(a):
    """`a` as the source of a numpy array."""
    a = np.asarray(a)
    if np.iscomplexobj(a):
        rows = [[complex(round(z.real, 6), round(z.imag, 6)) for z in row] for row in a.reshape(a.shape[0], -1)]
        return f"np.array({rows!r}).reshape({a.shape!r})"
    return f"np.array({np.round(a, 6).tolist()!r})"


class Program:
    """One random program's source, every choice from `seed`."""

    def __init__(self, seed):
        self.seed = seed
        self.rng = pyrandom.Random(seed)
        self.lines = []
        self.indent = 2
        self.mcms = 0

    def emit(self, line):
        self.lines.append("    " * self.indent + line)

    def angle(self):
        """An angle: a constant, an argument, or a function of the arguments (and of a loop's
        index inside a loop)."""
        r = self.rng
        k = r.randrange(self.nparams)
        choices = [f"x[{k}]", f"x[{k}]", f"{r.uniform(-3, 3):.4f}", f"x[{k}] * {r.uniform(-2, 2):.3f}",
                   f"jnp.sin(x[{k}])", f"x[{k}] + x[{r.randrange(self.nparams)}]"]
        if self.loop_index:
            choices += [f"x[{k}] * ({self.loop_index} + 1)", f"0.3 * {self.loop_index}"]
        return r.choice(choices)

    def gate(self, depth=0):
        """One gate application, perhaps adjoint or controlled."""
        r = self.rng
        fits = [g for g in GATES if g[2] <= self.wires]
        kind = r.random()
        if kind < 0.06 and self.wires >= 1:
            wires = r.sample(range(self.wires), r.choice([1, 1, 2]) if self.wires >= 2 else 1)
            call = f"qml.QubitUnitary({random_unitary(r, 2 ** len(wires), real=r.random() < 0.5)}, wires={wires})"
        elif kind < 0.1:
            w = r.randrange(self.wires)
            a = self.angle()
            if r.random() < 0.5:
                call = (f"qml.QubitUnitary(jnp.array([[jnp.cos({a}), -jnp.sin({a})], "
                        f"[jnp.sin({a}), jnp.cos({a})]]), wires=[{w}])")
            else:
                call = (f"qml.QubitUnitary(jnp.array([[jnp.exp(-0.5j * {a}), 0], "
                        f"[0, jnp.exp(0.5j * {a})]]), wires=[{w}])")
        elif kind < 0.14:
            wires = r.sample(range(self.wires), r.randint(1, self.wires))
            call = f"qml.MultiRZ({self.angle()}, wires={wires})"
        elif kind < 0.17:
            wires = r.sample(range(self.wires), r.randint(1, self.wires))
            word = "".join(r.choice("XYZ") for _ in wires)
            call = f"qml.PauliRot({self.angle()}, {word!r}, wires={wires})"
        elif kind < 0.19:
            call = f"qml.GlobalPhase({self.angle()}, wires={list(range(self.wires))})"
        else:
            name, np_, nw = r.choice(fits)
            wires = r.sample(range(self.wires), nw)
            params = "".join(f"{self.angle()}, " for _ in range(np_))
            call = f"qml.{name}({params}wires={wires})"
        used = set()
        if "wires=" in call:
            used = set(eval(call.rsplit("wires=", 1)[1].rstrip(")")))
        free = [w for w in range(self.wires) if w not in used]
        mod = r.random()
        if mod < 0.12 and depth == 0 and "GlobalPhase" not in call:
            return f"qml.adjoint({call})"
        if mod < 0.22 and free and "GlobalPhase" not in call:
            ctl = r.sample(free, r.randint(1, min(2, len(free))))
            vals = [r.random() < 0.7 for _ in ctl]
            return f"qml.ctrl({call}, control={ctl}, control_values={vals})"
        return call

    def body(self, n, in_loop=False):
        r = self.rng
        for _ in range(n):
            c = r.random()
            if c < 0.08 and not in_loop and not self.diff:
                self.mcm()
            elif c < 0.14 and not in_loop:
                self.loop()
            elif c < 0.2 and not in_loop:
                self.classical_cond()
            else:
                self.emit(self.gate())

    def mcm(self):
        r = self.rng
        w = r.randrange(self.wires)
        m = f"m{self.mcms}"
        self.mcms += 1
        opts = []
        if r.random() < 0.3:
            opts.append("reset=True")
        if r.random() < 0.2 and self.shots is None:
            opts.append(f"postselect={r.randrange(2)}")
        self.emit(f"{m} = catalyst.measure({', '.join([f'wires={w}'] + opts)})")
        self.emit(f"@qml.cond({m})")
        self.emit("def branch():")
        self.indent += 1
        self.emit(self.gate(depth=1))
        self.indent -= 1
        self.emit("branch()")

    def classical_cond(self):
        r = self.rng
        k = r.randrange(self.nparams)
        self.emit(f"@qml.cond(x[{k}] > {r.uniform(-1, 1):.3f})")
        self.emit("def branch():")
        self.indent += 1
        self.body(r.randint(1, 3), in_loop=True)
        self.indent -= 1
        if r.random() < 0.6:
            self.emit("@branch.otherwise")
            self.emit("def branch():")
            self.indent += 1
            self.body(r.randint(1, 3), in_loop=True)
            self.indent -= 1
        self.emit("branch()")

    def loop(self):
        r = self.rng
        n = r.randint(1, 4)
        kind = "for" if self.diff or r.random() < 0.7 else "while"
        if kind == "for":
            self.emit(f"@catalyst.for_loop(0, {n}, 1)")
            self.emit("def layer(i):")
        else:
            self.emit(f"@catalyst.while_loop(lambda i: i < {n})")
            self.emit("def layer(i):")
        self.indent += 1
        self.loop_index = "i"
        self.body(r.randint(1, 3), in_loop=True)
        self.loop_index = None
        self.emit("return i + 1" if kind == "while" else "pass")
        self.indent -= 1
        self.emit("layer(0)" if kind == "while" else "layer()")

    def observable(self):
        r = self.rng
        c = r.random()
        if c < 0.5:
            return f"qml.{r.choice(NAMED_OBS[:4] if self.wires else NAMED_OBS)}({r.randrange(self.wires)})"
        if c < 0.7 and self.wires >= 2:
            ws = r.sample(range(self.wires), r.randint(2, self.wires))
            return " @ ".join(f"qml.{r.choice(NAMED_OBS[:4])}({w})" for w in ws)
        if c < 0.82:
            ws = r.sample(range(self.wires), 1 if self.wires == 1 or r.random() < 0.6 else 2)
            return f"qml.Hermitian({random_hermitian(r, 2 ** len(ws))}, wires={ws})"
        terms = []
        for _ in range(r.randint(1, 3)):
            ws = r.sample(range(self.wires), r.randint(1, min(2, self.wires)))
            op = " @ ".join(f"qml.{r.choice(NAMED_OBS[:4])}({w})" for w in ws)
            coeff = f"{r.uniform(-1, 1):.3f}" if r.random() < 0.7 else f"x[{r.randrange(self.nparams)}]"
            terms.append((coeff, op))
        # qml.Hamiltonian takes constant coefficients only; a sum of products takes traced ones.
        if r.random() < 0.5 and not any(c.startswith("x[") for c, _ in terms):
            return f"qml.Hamiltonian([{', '.join(c for c, _ in terms)}], [{', '.join(o for _, o in terms)}])"
        return " + ".join(f"{c} * ({o})" for c, o in terms)

    def measurements(self):
        r = self.rng
        if self.diff == "grad":
            return [f"qml.expval({self.observable()})"]
        out = []
        for _ in range(r.randint(1, 3)):
            c = r.random()
            if self.shots is not None and c < 0.4:
                if r.random() < 0.5:
                    ws = r.sample(range(self.wires), r.randint(1, self.wires))
                    out.append(f"qml.sample(wires={ws})")
                else:
                    out.append("qml.counts()")
            elif c < 0.5:
                out.append(f"qml.expval({self.observable()})")
            elif c < 0.65 and not self.diff:  # Catalyst forbids variances in gradients
                out.append(f"qml.var({self.observable()})")
            elif c < 0.85:
                ws = r.sample(range(self.wires), r.randint(1, self.wires))
                out.append(f"qml.probs(wires={ws})")
            elif self.shots is None and not self.diff:
                out.append("qml.state()")
            else:
                out.append(f"qml.expval({self.observable()})")
        return out

    def source(self):
        r = self.rng
        self.wires = r.choice([1, 2, 2, 3, 3, 4])
        self.nparams = r.randint(1, 4)
        self.loop_index = None
        self.diff = r.choice([None, None, "grad", "jacobian", "value_and_grad"])
        if self.diff == "value_and_grad":
            self.diff = "grad"
            vag = True
        else:
            vag = False
        self.shots = None if self.diff or r.random() < 0.7 else r.choice([5, 20, 100])
        method = r.choice(["adjoint", "parameter-shift", "best", "best"]) if self.diff else r.choice(
            [None, "best", "adjoint", "parameter-shift"])
        qseed = r.randrange(1, 1000)
        if r.random() < 0.15 and not self.diff:
            state = r.random()
            if state < 0.5:
                bits = [r.randrange(2) for _ in range(self.wires)]
                self.emit(f"qml.BasisState(np.array({bits}), wires={list(range(self.wires))})")
            else:
                g = np.random.default_rng(r.randrange(2**32))
                v = g.normal(size=2 ** self.wires) + 1j * g.normal(size=2 ** self.wires)
                v = v / np.linalg.norm(v)
                self.emit(f"qml.StatePrep({literal(v)}, wires={list(range(self.wires))})")
        self.body(r.randint(2, 8))
        ms = self.measurements()
        self.emit("return " + (ms[0] if len(ms) == 1 else "(" + ", ".join(ms) + ",)"))
        qnode_opts = f", diff_method={method!r}" if method else ""
        head = ["def program(x):",
                f"    dev = qml.device('lightning.qubit', wires={self.wires})"]
        if self.shots is not None:
            head.append(f"    @partial(qml.set_shots, shots={self.shots})")
        head += [f"    @qml.qnode(dev{qnode_opts})", "    def circuit(x):"]
        lines = head + self.lines
        if self.diff:
            argnums = ""
            how = r.choice(["grad", "jacobian"]) if self.diff == "grad" else "jacobian"
            fn = "value_and_grad" if vag else how
            # Catalyst's pipeline fails on value_and_grad by finite differences.
            fd = ', method="fd"' if r.random() < 0.25 and not vag else ""
            lines.append(f"    return catalyst.{fn}(circuit{argnums}{fd})(x)")
        else:
            lines.append("    return circuit(x)")
        args = [round(r.uniform(-np.pi, np.pi), 4) for _ in range(self.nparams)]
        # Samples and mid-circuit measurements draw: seeded, they are compared exactly.
        seed = qseed if self.shots is not None or self.mcms else None
        return "\n".join(lines) + "\n", args, seed


def make(seed):
    """The program of `seed`: (source, arguments, qjit seed)."""
    return Program(seed).source()


def compile_program(src, seed):
    env = {"qml": qml, "catalyst": catalyst, "jnp": jnp, "np": np, "jax": jax}
    exec("from functools import partial\n" + src, env)
    return catalyst.qjit(env["program"], seed=seed)


def write(out, seeds, refused_path):
    os.makedirs(out, exist_ok=True)
    refused = {}
    written = 0
    start = time.time()
    for s in seeds:
        src, args, qseed = make(s)
        name = f"circuit_{s}"
        try:
            fn = compile_program(src, qseed)
            record.write_case(out, name, fn, [(np.asarray(args, dtype=np.float64),)], quantum=True,
                              program=f"corpus-gen/circuits_random/random_circuits.py:{s}",
                              source=src)
            written += 1
        except Exception as e:  # noqa: BLE001  (Catalyst's refusal is what is recorded)
            refused[name] = f"{type(e).__name__}: {e}".splitlines()[0][:300]
            for ext in ("jaxpr", "json"):
                if os.path.exists(f"{out}/{name}.{ext}"):
                    os.remove(f"{out}/{name}.{ext}")
        done = len(refused) + written
        if done % 50 == 0:
            print(f"{done} programs, {written} cases, {len(refused)} refused by Catalyst, "
                  f"{time.time() - start:.0f} s", flush=True)
    with open(refused_path, "w") as f:
        json.dump({"producer": f"pennylane-catalyst {catalyst.__version__} (jax {jax.__version__})",
                   "refused": refused}, f, indent=1, sort_keys=True)
        f.write("\n")
    print(f"{len(seeds)} programs: {written} cases, {len(refused)} refused by Catalyst, "
          f"{time.time() - start:.0f} s")


def main():
    cmd = sys.argv[1]
    if cmd == "show":
        src, args, qseed = make(int(sys.argv[2]))
        print(src + f"# x = {args}, qjit seed = {qseed}")
        return
    n, out = int(sys.argv[2]), sys.argv[3]
    seeds = list(range(RUN_BASE, RUN_BASE + n)) if cmd == "run" else \
        list(range(SAMPLE_BASE, SAMPLE_BASE + n)) + FOUND
    os.makedirs(out, exist_ok=True)
    write(out, seeds, os.path.join(out, "refused.json"))


if __name__ == "__main__":
    main()
