"""jax-md, as its docs write it: `space.periodic(box)`, `energy.soft_sphere_pair`,
`energy.lennard_jones_pair`, neighbor lists, `simulate.nve`, `minimize.fire_descent`."""
import jax
import numpy as np
from jax_md import energy, minimize, partition, quantity, simulate, space

from common import Program, rng

DISTRIBUTIONS = ["jax-md"]

N, BOX = 12, 4.0


def positions(seed):
    return (rng(seed).uniform(size=(N, 2)) * BOX).astype(np.float32)


def programs():
    ps = []
    displacement, shift = space.periodic(BOX)
    R = positions(1)
    soft = energy.soft_sphere_pair(displacement)
    ps.append(Program("soft_sphere_energy", soft, [R], "energy.soft_sphere_pair in space.periodic"))
    lj = energy.lennard_jones_pair(displacement, sigma=0.8, epsilon=1.0)
    ps.append(Program("lennard_jones_energy", lj, [R], "energy.lennard_jones_pair"))
    ps.append(Program("lennard_jones_forces", quantity.force(lj), [R], "quantity.force (minus the energy's gradient)"))
    morse = energy.morse_pair(displacement, sigma=1.0, epsilon=2.0, alpha=3.0)
    ps.append(Program("morse_energy", morse, [R], "energy.morse_pair"))

    neighbor_fn, nl_energy = energy.lennard_jones_neighbor_list(displacement, BOX, r_cutoff=1.5, dr_threshold=0.2)
    nbrs = neighbor_fn.allocate(R)
    ps.append(Program("lennard_jones_neighbor_energy", lambda R, idx: nl_energy(R, neighbor=nbrs.set(idx=idx)),
                      [R, nbrs.idx], "energy.lennard_jones_neighbor_list with an allocated neighbor list"))
    ps.append(Program("neighbor_list_update", lambda R, idx: neighbor_fn.update(R, nbrs.set(idx=idx)).idx,
                      [R, nbrs.idx], "neighbor_fn.update (the neighbor list's rebuild)", build=False))

    init_fn, apply_fn = simulate.nve(soft, shift, dt=1e-3)
    st = init_fn(jax.random.PRNGKey(0), R, kT=0.1)
    ps.append(Program("nve_step", lambda s: apply_fn(s), [st], "simulate.nve: one velocity-Verlet step"))
    ps.append(Program("nve_fori_loop", lambda s: jax.lax.fori_loop(0, 5, lambda i, s: apply_fn(s), s), [st],
                      "the docs' simulation loop: lax.fori_loop over apply_fn"))
    init_l, apply_l = simulate.nvt_langevin(soft, shift, dt=1e-3, kT=0.1, gamma=0.1)
    stl = init_l(jax.random.PRNGKey(1), R)
    ps.append(Program("nvt_langevin_step", lambda s: apply_l(s), [stl], "simulate.nvt_langevin: one step"))
    fire_init, fire_apply = minimize.fire_descent(soft, shift)
    fs = fire_init(R)
    ps.append(Program("fire_descent_steps", lambda s: jax.lax.fori_loop(0, 4, lambda i, s: fire_apply(s), s), [fs],
                      "minimize.fire_descent: four steps"))
    free_disp, _ = space.free()
    ps.append(Program("free_space_pair_distances", lambda R: space.distance(space.map_product(free_disp)(R, R)), [R],
                      "space.free, space.map_product, space.distance"))
    ps.append(Program("kinetic_energy_temperature", lambda v: (quantity.kinetic_energy(velocity=v),
                                                                quantity.temperature(velocity=v)),
                      [rng(2).standard_normal((N, 2)).astype(np.float32)], "quantity.kinetic_energy, temperature"))
    return ps
