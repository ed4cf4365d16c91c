"""Key-reuse corpus: programs printed by JAX (jax 0.10.2) with JAX's own
key-reuse verdict on each (`jax.experimental.key_reuse._core.check_key_reuse_jaxpr`).

Writes OUT/programs/NAME.jaxpr (programs written to use PRNG keys, a third or
more of them reusing one) and OUT/verdicts.json: for each of those and for
each program of `tests/data/jax-suite/random` (traced again here from
`corpus-gen/jax/programs_random.py`, and its printed text compared with the
stored one), JAX's verdict and message, and whether the program reads raw
`uint32` key data (which JAX's checker does not follow).

    /work/venvs/venv-trace/bin/python corpus-gen/key_reuse/gen.py tests/data/key-reuse
"""
import json
import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax, random
from jax.experimental.key_reuse import _core as key_reuse

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# What consumes a key, each a function of a key returning arrays.
USES = {
    "split": lambda k: random.split(k),
    "fold_in": lambda k: random.fold_in(k, 3),
    "bits": lambda k: random.bits(k, (3,)),
    "uniform": lambda k: random.uniform(k, (3,)),
    "normal": lambda k: random.normal(k, (2, 2)),
    "categorical": lambda k: random.categorical(k, jnp.log(jnp.array([0.2, 0.3, 0.5]))),
}


def num(x):
    """A float32 scalar of what a use returns (keys by their data)."""
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        x = random.key_data(x)
    return jnp.sum(x).astype(jnp.float32)


def patterns(u, v):
    """Programs of a key `k` using USES `u` then `v`, in each context."""
    split2 = lambda k: tuple(random.split(k))
    def scan_nosplit(k):
        return lax.scan(lambda c, _: (c, u(c)), k, None, length=3)
    def scan_split(k):
        def body(c, _):
            c, sub = split2(c)
            return c, u(sub)
        return lax.scan(body, k, None, length=3)
    def while_nosplit(k):
        def body(s):
            c, i, acc = s
            return c, i + 1, acc + num(u(c))
        return lax.while_loop(lambda s: s[1] < 3, body, (k, 0, jnp.float32(0)))
    def while_split(k):
        def body(s):
            c, i, acc = s
            c, sub = split2(c)
            return c, i + 1, acc + num(u(sub))
        return lax.while_loop(lambda s: s[1] < 3, body, (k, 0, jnp.float32(0)))
    return {
        "seq": lambda k: (u(k), v(k)),
        "split": lambda k: (lambda a, b: (u(a), v(b)))(*split2(k)),
        "jit_then": lambda k: (jax.jit(u)(k), v(k)),
        "in_jit": lambda k: jax.jit(lambda kk: (u(kk), v(kk)))(k),
        "jit_split": lambda k: jax.jit(lambda kk: (lambda a, b: (u(a), v(b)))(*split2(kk)))(k),
        "cond": lambda k: lax.cond(jnp.sum(random.key_data(k)) > 0,
                                   lambda kk: num(u(kk)),
                                   lambda kk: num(v(kk)), k),
        "cond_then": lambda k: (lax.cond(True, lambda kk: num(u(kk)),
                                         lambda kk: jnp.float32(0), k), v(k)),
        "scan_nosplit": scan_nosplit,
        "scan_split": scan_split,
        "while_nosplit": while_nosplit,
        "while_split": while_split,
        "vmap_then": lambda k: (jax.vmap(u)(random.split(k, 3)), v(k)),
        "vmap_keys_twice": lambda k: (lambda ks: (jax.vmap(u)(ks), v(ks[0])))(random.split(k, 3)),
        "keys_rows": lambda k: (lambda ks: (u(ks[0]), v(ks[1])))(random.split(k, 3)),
        "keys_row_twice": lambda k: (lambda ks: (u(ks[1]), v(ks[1])))(random.split(k, 3)),
        "keys_slices": lambda k: (lambda ks: (jax.vmap(u)(ks[:2]), v(ks[2])))(random.split(k, 3)),
        "keys_dynamic": lambda k: (lambda ks: (u(lax.dynamic_index_in_dim(ks, 1, keepdims=False)),
                                                v(ks[1])))(random.split(k, 3)),
        "clone": lambda k: (u(random.clone(k)), v(k)),
    }


def programs():
    """(name, function, key argument kind) of every written program."""
    names = list(USES)
    for i, un in enumerate(names):
        vn = names[(i + 1) % len(names)]
        for pname, f in patterns(USES[un], USES[vn]).items():
            yield f"{pname}_{un}_{vn}", f, "key"
    # Raw uint32[2] key data: JAX wraps it with `random_wrap` at each use.
    for un in ["bits", "uniform", "normal", "split"]:
        u = USES[un]
        yield f"raw_seq_{un}", lambda d, u=u: (u(d), u(d)), "raw"
        yield f"raw_split_{un}", lambda d, u=u: (lambda ks: (u(ks[0]), u(ks[1])))(random.split(d)), "raw"
        yield f"raw_jit_{un}", lambda d, u=u: (jax.jit(u)(d), u(d)), "raw"
        yield f"raw_scan_nosplit_{un}", lambda d, u=u: lax.scan(
            lambda c, _: (c, u(c)), d, None, length=3), "raw"
        yield f"raw_scan_split_{un}", lambda d, u=u: lax.scan(
            lambda c, _: (lambda ks: (ks[0], u(ks[1])))(random.split(c)), d, None, length=3), "raw"
        yield f"raw_once_{un}", lambda d, u=u: u(d), "raw"
        yield f"raw_wrapped_twice_{un}", lambda d, u=u: (
            u(random.wrap_key_data(d)), u(random.wrap_key_data(d))), "raw"
    # Keys made inside the program.
    yield "seeded_twice", lambda s: (random.normal(random.key(s)), random.uniform(random.key(s))), "seed"
    yield "seeded_reuse", lambda s: (lambda k: (random.normal(k), random.uniform(k)))(random.key(s)), "seed"
    yield "legacy_seeded_reuse", lambda s: (lambda k: (random.normal(k), random.uniform(k)))(random.PRNGKey(s)), "seed"


def verdict(jaxpr):
    try:
        key_reuse.check_key_reuse_jaxpr(jaxpr)
        return False, None
    except jax.errors.KeyReuseError as e:
        return True, str(e).splitlines()[0][:300]


def main():
    out = sys.argv[1]
    pdir = os.path.join(out, "programs")
    os.makedirs(pdir, exist_ok=True)
    for f in os.listdir(pdir):
        os.remove(os.path.join(pdir, f))
    args = {"key": random.key(0), "raw": np.asarray(random.key_data(random.key(0))),
            "seed": np.int32(0)}
    verdicts = {}
    for name, fn, kind in programs():
        cj = jax.make_jaxpr(fn)(args[kind])
        reuse, why = verdict(cj.jaxpr)
        with open(os.path.join(pdir, name + ".jaxpr"), "w") as fh:
            fh.write(str(cj) + "\n")
        verdicts[f"programs/{name}.jaxpr"] = {"jax_key_reuse": reuse, "jax_message": why,
                                               "raw_keys": kind == "raw"}
    # JAX's random tests, as tests/data/jax-suite/random holds them.
    sys.path.insert(0, os.path.join(ROOT, "corpus-gen", "jax"))
    import programs_random
    suite = os.path.join(ROOT, "tests", "data", "jax-suite", "random")
    stored = json.load(open(os.path.join(suite, "manifest.json")))["programs"]
    same = 0
    for prog in programs_random.programs(None):
        path = os.path.join(suite, prog.name + ".jaxpr")
        if prog.name not in stored or not os.path.exists(path):
            continue
        cj = jax.make_jaxpr(prog.fn)(*prog.args)
        if str(cj) + "\n" != open(path).read():
            print(f"{prog.name}: traced text differs from the stored one; left out", flush=True)
            continue
        same += 1
        reuse, why = verdict(cj.jaxpr)
        raw = prog.name.endswith("_data") or prog.name.endswith("_legacy")
        verdicts[f"jax-suite/random/{prog.name}.jaxpr"] = {
            "jax_key_reuse": reuse, "jax_message": why, "raw_keys": raw}
    with open(os.path.join(out, "verdicts.json"), "w") as fh:
        json.dump({"producer": f"jax {jax.__version__}", "verdicts": verdicts}, fh,
                  indent=1, sort_keys=True)
    n = len(verdicts)
    print(f"{n} programs ({same} of jax-suite/random), "
          f"{sum(v['jax_key_reuse'] for v in verdicts.values())} with a reuse by JAX's checker")


if __name__ == "__main__":
    main()
