#!/usr/bin/env bash
# Builds the whole build set of the ecosystem corpus (tests/data/ecosystem,
# corpus-gen/ecosystem) through both back ends and compares every output with
# JAX's: the test `ecosystem_sample_builds_with_jaxs_values` with
# ECOSYSTEM_BUILDS=all (CI builds its fixed sample only). It prints each back
# end's tally (right, refused by reason, wrong, failed; programs with library
# primitives, programs outside the build set (the manifest's
# `outside_build_set`: their text cannot hold their values) and complex ones
# counted apart), its rate over the build set and over everything, and fails
# below 95% right over the build set or on any wrong value.
set -euo pipefail
cd "$(dirname "$0")/.."
ECOSYSTEM_BUILDS=all exec cargo test --release -p jaxpr-build --test jax_suite \
  ecosystem_sample_builds_with_jaxs_values -- --nocapture
