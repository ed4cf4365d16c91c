"""Run by `live.py pytest` through the installed wheel's pytest plugin:
tests named `test_fails_*` must fail, with the message live.py expects."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec as P

import jaxpr
from jaxpr.testing import assert_collectives, assert_cost, assert_no_key_reuse, assert_valid


def dense(x, w):
    return jax.nn.relu(x @ w)


X, W = jnp.ones((8, 16)), jnp.ones((16, 32))


def reuses(k):
    return jax.random.normal(k, (2,)) + jax.random.normal(k, (2,))


def splits(k):
    a, b = jax.random.split(k)
    return jax.random.normal(a, (2,)) + jax.random.normal(b, (2,))


def sharded_mean(x):
    mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))

    def local(block):
        return jax.lax.psum(block.sum(), "i")

    return jax.shard_map(local, mesh=mesh, in_specs=P("i"), out_specs=P())(x)


def sharded_ring(x):
    """A `ppermute` and a `psum` each round of a `fori_loop` of 3 (a `scan`)."""
    mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))

    def local(block):
        def round_(_, b):
            return jax.lax.ppermute(b, "i", [(k, (k + 1) % 4) for k in range(4)]) + jax.lax.psum(b.sum(), "i")

        return jax.lax.fori_loop(0, 3, round_, block)

    return jax.shard_map(local, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)


def sharded_until(x):
    """A `psum` each round of a `while_loop`: how many rounds is a value."""
    mesh = jax.make_mesh((4,), ("i",), axis_types=(jax.sharding.AxisType.Auto,))

    def local(block):
        return jax.lax.while_loop(lambda b: b.sum() < 100.0, lambda b: b + jax.lax.psum(b, "i"), block)

    return jax.shard_map(local, mesh=mesh, in_specs=P("i"), out_specs=P("i"))(x)


def test_valid_function():
    assert_valid(dense, X, W)


def test_fixture_asserts(jaxpr_assert):
    jaxpr_assert.assert_valid(dense, X, W)
    jaxpr_assert.assert_no_key_reuse(splits, jax.random.key(1))


def test_cost_within_budget():
    flops = 2 * 8 * 16 * 32  # the matmul's multiply-adds; relu's max is one more per element
    assert_cost(dense, X, W, flops_at_most=flops + 8 * 32, peak_bytes_at_most=10**6)


def test_no_key_reuse():
    assert_no_key_reuse(splits, jax.random.key(0))


def test_expected_collectives():
    assert_collectives(sharded_mean, jnp.ones(16), expected={"psum_invariant": 1})  # shard_map's psum, as JAX 0.10 prints it


def test_collectives_run_per_loop_iteration():
    assert_collectives(sharded_ring, jnp.ones(16), expected={("ppermute", "i"): 3, ("psum_invariant", "i"): 3})


def test_stats_dataframe():
    frame = jaxpr.stats(dense, X, W).to_dataframe(by="primitive")
    assert set(frame["primitive"]) >= {"dot_general"}


def test_fails_key_reuse():
    assert_no_key_reuse(reuses, jax.random.key(0))


def test_fails_over_budget():
    assert_cost(dense, X, W, flops_at_most=1000)


def test_fails_wrong_collectives():
    assert_collectives(sharded_mean, jnp.ones(16), expected={"all_gather": 1})


def test_fails_collectives_in_a_while_loop():
    assert_collectives(sharded_until, jnp.ones(16), expected={"psum": 1})


@pytest.mark.jaxpr_rules(error=["key-reuse"])
def test_fails_marker_makes_an_error(jaxpr_assert):
    jaxpr_assert.assert_valid(reuses, jax.random.key(0))


@pytest.mark.jaxpr_rules(ignore=["key-reuse"])
def test_marker_ignores(jaxpr_assert):
    jaxpr_assert.assert_valid(reuses, jax.random.key(0), allow_warnings=False)
