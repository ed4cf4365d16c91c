"""Writes tests/data/diff/: pairs of jaxprs that real JAX traces from one
Python function called two ways, and what JAX itself says about the pair.

For each case NAME:
- `NAME.a.jaxpr`, `NAME.b.jaxpr`: the two jaxprs as printed (`str(closed_jaxpr)`).
- `NAME.json`: `{"jax", "what", "a_call", "b_call", "same_text_up_to_names",
  "a_in_avals", "b_in_avals", "changed_inputs"}`. The avals are JAX's own
  (`jax.jit(f).trace(*args).jaxpr.in_avals`, with `weak_type`, which the
  printed jaxpr does not show); `changed_inputs` lists, per flat input
  position, what of shape, dtype and weak type differs between the calls;
  `same_jaxpr` is whether JAX prints the two the same (names aside:
  each is printed on its own), `same_computation` whether the two Python
  functions compute the same by construction (reordered or renamed code);
  `retraces` is whether `jax.jit(f)` compiled again for the second call
  (JAX's own cache size, `_cache_size()`).

Run from the checkout's root with jax 0.10.2:

    JAX_PLATFORMS=cpu /work/venvs/venv-trace/bin/python corpus-gen/diff/gen.py tests/data/diff
"""
import json, sys, functools
import jax, jax.numpy as jnp, numpy as np
from jax import lax

out = sys.argv[1]
CASES = []


def case(name, what, fn, a_args, b_args, a_call, b_call, static=(), same_computation=False):
    CASES.append((name, what, fn, a_args, b_args, a_call, b_call, static, same_computation))


def aval_json(a):
    return {"shape": list(a.shape), "dtype": str(a.dtype), "weak_type": bool(a.weak_type)}


def weak_mix(x):
    # A weakly typed scalar takes the array's dtype; a strong float32 one
    # promotes the bfloat16 array to float32.
    return jnp.sin(x) * jnp.ones(3, jnp.bfloat16)


case("weak_vs_strong", "a Python float (weakly typed) vs jnp.float32 (strong)",
     weak_mix, (1.0,), (jnp.float32(1.0),), "f(1.0)", "f(jnp.float32(1.0))")


def weak_plain(x):
    return jnp.sin(x) * 2.0 + x


case("weak_vs_strong_same_text",
     "a Python float vs jnp.float32 where the promotion does not differ: the text is the same",
     weak_plain, (1.0,), (jnp.float32(1.0),), "f(1.0)", "f(jnp.float32(1.0))")


def power(x, n):
    y = x
    for _ in range(n):
        y = jnp.tanh(y) * x
    return y ** n


case("static_argument", "a changed static argument (static_argnums=1): n=2 vs n=3",
     power, (jnp.arange(4.0), 2), (jnp.arange(4.0), 3), "f(x, 2)", "f(x, 3)", static=(1,))


def model(w, x):
    h = jnp.tanh(x @ w)
    return jnp.sum(h * h, axis=-1)


case("changed_shape", "a changed argument shape: x f32[8,4] vs f32[16,4]",
     model, (jnp.ones((4, 5)), jnp.ones((8, 4))), (jnp.ones((4, 5)), jnp.ones((16, 4))),
     "f(w, x[8,4])", "f(w, x[16,4])")


case("changed_dtype", "a changed argument dtype: float32 vs int32",
     lambda x: jnp.cumsum(x * 2), (jnp.ones(5, jnp.float32),), (jnp.ones(5, jnp.int32),),
     "f(float32[5])", "f(int32[5])")


def order_a(x, y):
    s = jnp.sin(x)
    c = jnp.cos(y)
    e = jnp.exp(x)
    return s * c + e


def order_b(x, y):
    e = jnp.exp(x)
    c = jnp.cos(y)
    s = jnp.sin(x)
    return s * c + e


case("reordered", "the same computation written in another order (independent equations move)",
     (order_a, order_b), (jnp.ones(3), jnp.ones(3)), (jnp.ones(3), jnp.ones(3)),
     "order_a(x, y)", "order_b(x, y)", same_computation=True)


def loop(x):
    def body(carry, xi):
        return carry * 2.0 + jnp.sin(xi), carry
    return lax.scan(body, x[0], x)


def loop_renamed(inp):
    def step(acc, item):
        doubled = acc * 2.0
        return doubled + jnp.sin(item), acc
    return lax.scan(step, inp[0], inp)


case("renamed_only",
     "the same program traced from code with other names, after an unrelated jaxpr (variable names shift)",
     (loop, loop_renamed), (jnp.ones(4),), (jnp.ones(4),), "loop(x)", "loop_renamed(x)",
     same_computation=True)


def loop_scale(scale):
    def f(x):
        def body(carry, xi):
            return carry * scale + jnp.sin(xi), carry
        return lax.scan(body, x[0], x)
    return f


case("nested_change", "a constant inside a scan body changes: 2.0 vs 3.0",
     (loop_scale(2.0), loop_scale(3.0)), (jnp.ones(4),), (jnp.ones(4),),
     "f with scale 2.0", "f with scale 3.0")


def main():
    for name, what, fn, a_args, b_args, a_call, b_call, static, same_computation in CASES:
        fa, fb = fn if isinstance(fn, tuple) else (fn, fn)
        ja = jax.make_jaxpr(fa, static_argnums=static)(*a_args)
        jb = jax.make_jaxpr(fb, static_argnums=static)(*b_args)
        if name == "renamed_only":
            # JAX names variables per printing context: B is printed after
            # another jaxpr in the same context (as JAX prints several
            # jaxprs together), so its names start later in the alphabet.
            from jax._src import core
            prefix = jax.make_jaxpr(lambda x: jnp.cos(jnp.sin(x) + 1.0) * 3.0)(jnp.ones(2))
            context = core.JaxprPpContext()
            settings = core.JaxprPpSettings()
            core.pp_jaxpr(prefix.jaxpr, context, settings).format()
            text_b = core.pp_jaxpr(jb.jaxpr, context, settings).format()
        else:
            text_b = str(jb)
        text_a = str(ja)
        # JAX's own view of the inputs, weak types included.
        dyn = lambda args: [a for i, a in enumerate(args) if i not in static]
        ta = jax.jit(fa, static_argnums=static).trace(*a_args).jaxpr.in_avals
        tb = jax.jit(fb, static_argnums=static).trace(*b_args).jaxpr.in_avals
        changed = []
        for i, (x, y) in enumerate(zip(ta, tb)):
            what_differs = [k for k in ("shape", "dtype", "weak_type")
                            if getattr(x, k) != getattr(y, k)]
            if what_differs:
                changed.append({"input": i, "differs": what_differs})
        retraces = None
        if fa is fb:
            jitted = jax.jit(fa, static_argnums=static)
            jitted(*a_args)
            before = jitted._cache_size()
            jitted(*b_args)
            retraces = jitted._cache_size() > before
        with open(f"{out}/{name}.a.jaxpr", "w") as f:
            f.write(text_a + "\n")
        with open(f"{out}/{name}.b.jaxpr", "w") as f:
            f.write(text_b + "\n")
        meta = {
            "jax": jax.__version__,
            "what": what,
            "a_call": a_call,
            "b_call": b_call,
            "a_in_avals": [aval_json(a) for a in ta],
            "b_in_avals": [aval_json(a) for a in tb],
            "changed_inputs": changed,
            "retraces": retraces,
            # The two functions compute the same by construction (written
            # in another order, or with other names).
            "same_computation": same_computation,
            "same_jaxpr": ja.jaxpr.pretty_print() == jb.jaxpr.pretty_print() and ja.consts == jb.consts,
        }
        with open(f"{out}/{name}.json", "w") as f:
            json.dump(meta, f, indent=1)
            f.write("\n")
        print(name, "changed inputs:", changed, "retraces:", retraces)


main()
