//! Multi-device programs and Pallas kernels (issues 40 and 41): one
//! device's counts for a `shard_map`/`xla_pmap` body, the bytes each
//! collective moves per device, and a kernel counted per grid point.
//!
//! The per-device counts are held to XLA's cost analysis of the partitioned
//! module JAX compiles for 8 host devices (`.compile().cost_analysis()`,
//! one device's program), recorded beside the programs by
//! `corpus-gen/sharding/cost.py` (`tests/data/sharding/jax-0.10.2/cost.json`).

use jaxpr_check::{EqnId, JaxprId};
use jaxpr_cost::{Amount, Exchange, FileCost, LoopCount, Options};
use std::path::{Path, PathBuf};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

struct Costed {
    analysis: jaxpr_check::Analysis,
    parse: jaxpr_syntax::Parse,
    cost: FileCost,
}

fn costed(text: &str, loops: LoopCount) -> Costed {
    let parse = jaxpr_syntax::parse(text);
    let analysis = jaxpr_check::check(&parse.file);
    assert!(
        analysis.diagnostics.is_empty(),
        "{:?}",
        analysis.diagnostics
    );
    let cost = jaxpr_cost::analyse(
        &parse.file,
        &analysis,
        Options {
            loops,
            ..Options::default()
        },
    );
    Costed {
        analysis,
        parse,
        cost,
    }
}

impl Costed {
    fn main(&self) -> &jaxpr_cost::JaxprCost {
        self.cost.jaxpr(self.analysis.main().unwrap())
    }
    /// Each collective's primitive and traffic, in text order.
    fn collectives(&self) -> Vec<(String, jaxpr_cost::Communication)> {
        let syntax = jaxpr_cost::eqns_by_start(&self.parse.file);
        let mut out: Vec<_> = (0..self.analysis.eqns.len() as u32)
            .map(EqnId)
            .filter_map(|e| {
                let info = self.analysis.eqn(e);
                let c = jaxpr_cost::communication(&self.analysis, syntax[&info.range.start], e)?;
                Some((info.range.start, info.primitive.to_string(), c))
            })
            .collect();
        out.sort_by_key(|(at, _, _)| *at);
        out.into_iter().map(|(_, p, c)| (p, c)).collect()
    }
}

fn constant(a: &Amount) -> i64 {
    a.as_constant()
        .unwrap_or_else(|| panic!("{a} is not a constant"))
}

/// Every collective of `collectives_1d` (an `f32[64,4]` split over the 8
/// devices of `x`: `f32[8,4]`, 128 bytes, per device), by the algorithm of
/// its registry row: ring all-reduce 2(n−1)·⌈128/8⌉, all-gather (n−1)/n of
/// the 1024-byte result, reduce-scatter (n−1)/n of the operand, ppermute
/// the operand, `axis_index` nothing; and the program's total is their sum.
#[test]
fn each_collective_moves_what_its_algorithm_says_per_device() {
    let text =
        std::fs::read_to_string(data().join("sharding/jax-0.10.2/collectives_1d.jaxpr")).unwrap();
    let c = costed(&text, LoopCount::Iterations);
    let got: Vec<(String, Exchange, i64, i64)> = c
        .collectives()
        .into_iter()
        .map(|(p, c)| (p, c.exchange, c.devices, constant(&c.bytes)))
        .collect();
    let (n, operand) = (8, 128);
    let ring = 2 * (n - 1) * operand / n;
    let expected = vec![
        ("psum_invariant", Exchange::AllReduce, n, ring),
        ("pmax", Exchange::AllReduce, n, ring),
        ("pmin", Exchange::AllReduce, n, ring),
        ("psum_invariant", Exchange::AllReduce, n, ring),
        (
            "all_gather",
            Exchange::AllGather,
            n,
            (n - 1) * (n * operand) / n,
        ),
        (
            "all_gather",
            Exchange::AllGather,
            n,
            (n - 1) * (n * operand) / n,
        ),
        (
            "reduce_scatter",
            Exchange::ReduceScatter,
            n,
            (n - 1) * operand / n,
        ),
        ("ppermute", Exchange::Permute, n, operand),
        ("axis_index", Exchange::Nothing, n, 0),
    ];
    let expected: Vec<(String, Exchange, i64, i64)> = expected
        .into_iter()
        .map(|(p, e, n, b)| (p.to_string(), e, n, b))
        .collect();
    assert_eq!(got, expected);
    let sum: i64 = got.iter().map(|g| g.3).sum();
    assert_eq!(constant(&c.main().total.communicated), sum);
    assert_eq!(c.main().devices, 8);
}

/// A 2-D mesh: a collective over one axis runs in groups of that axis's
/// size, over both in groups of their product; a collective in a loop body
/// is counted once per iteration.
#[test]
fn the_group_is_the_axes_the_collective_names_and_loops_repeat_it() {
    let text = "let body = { lambda ; a:f32[4,6]{V:(x,y)}. let
    b:f32[4,6]{V:x} = psum_invariant[axes=('y',)] a
    c:f32[4,6] = psum_invariant[axes=('x', 'y')] a
  in (b, c) } in
{ lambda ; d:f32[16,12]. let
    e:f32[16,6] f:f32[4,6] = shard_map[
      check_vma=True
      in_specs=(P('x', 'y'),)
      jaxpr=body
      mesh=Mesh('x': 4, 'y': 2, axis_types=(Auto, Auto))
      newly_manual_axes=frozenset({'x', 'y'})
      out_specs=(P('x',), P())
    ] d
  in (e, f) }
";
    let c = costed(text, LoopCount::Iterations);
    let got: Vec<(i64, i64)> = c
        .collectives()
        .iter()
        .map(|(_, c)| (c.devices, constant(&c.bytes)))
        .collect();
    // 96 bytes: over `y` (2 devices) 2·1·48, over both (8) 2·7·12.
    assert_eq!(got, vec![(2, 96), (8, 168)]);

    let text =
        std::fs::read_to_string(data().join("sharding/jax-0.10.2/collectives_in_fori_loop.jaxpr"))
            .unwrap();
    let per_iteration = costed(&text, LoopCount::Xla)
        .main()
        .total
        .communicated
        .clone();
    let all = costed(&text, LoopCount::Iterations)
        .main()
        .total
        .communicated
        .clone();
    let trips = text
        .split("length=")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .and_then(|t| t.parse::<i64>().ok())
        .unwrap_or(1);
    assert!(constant(&per_iteration) > 0);
    assert_eq!(constant(&all), trips * constant(&per_iteration), "{text}");
}

/// A `psum` over a named `vmap` axis runs on one device: no traffic.
#[test]
fn a_collective_over_a_vmap_axis_moves_nothing_between_devices() {
    let text =
        std::fs::read_to_string(data().join("sharding/jax-0.10.2/vmap_named_axis.jaxpr")).unwrap();
    let c = costed(&text, LoopCount::Iterations);
    assert!(c.collectives().is_empty());
    assert!(c.main().total.communicated.is_zero());
    assert_eq!(c.main().devices, 1);
}

/// The partitioned module XLA compiles is one device's program: for every
/// multi-device program of the corpus, the model's per-device
/// transcendentals are XLA's, and its FLOPs XLA's exactly for the programs
/// listed (the others differ by what XLA's optimisations fold away or add:
/// loop counters, algebraic simplification). Counting the whole mesh
/// (per device × devices) would match none of those with a non-zero count.
#[test]
fn per_device_counts_are_xla_s_for_the_partitioned_module() {
    let folder = data().join("sharding/jax-0.10.2");
    let recorded: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(folder.join("cost.json")).unwrap()).unwrap();
    let mut exact = Vec::new();
    let mut multi_device = 0;
    for (name, xla) in recorded["programs"].as_object().unwrap() {
        let text = std::fs::read_to_string(folder.join(format!("{name}.jaxpr"))).unwrap();
        let c = costed(&text, LoopCount::Xla);
        let main = c.main();
        if main.devices == 1 {
            continue;
        }
        multi_device += 1;
        let compiled = &xla["compiled"];
        let flops = constant(&main.total.flops);
        let transcendentals = constant(&main.total.transcendentals);
        assert_eq!(
            transcendentals as f64,
            compiled["transcendentals"].as_f64().unwrap(),
            "{name}"
        );
        if flops as f64 == compiled["flops"].as_f64().unwrap() {
            exact.push(name.as_str());
            if flops > 0 {
                assert_ne!(
                    (flops * main.devices) as f64,
                    compiled["flops"].as_f64().unwrap()
                );
            }
        }
    }
    assert_eq!(multi_device, 35);
    assert_eq!(
        exact,
        [
            "all_gather_axis1",
            "all_to_all_2d",
            "all_to_all_untiled",
            "collective_in_cond",
            "collectives_in_fori_loop",
            "explicit_axes_shard_map",
            "megatron_mlp",
            "partial_manual_axes",
            "partial_manual_collectives_loop",
            "partial_manual_two_of_three",
            "pcast_to_varying",
            "pmap_collectives",
            "pmap_in_axes",
            "psum_scalar_and_ints",
            "psum_scatter_untiled",
            "replicated_input_2d",
            "scan_inside_shard_map",
            "shard_map_in_scan",
            "shard_map_under_vmap",
        ]
    );
}

/// A Pallas kernel: its body once per grid point, and each operand's and
/// result's block once per grid point. `matmul_blocked`: a 2×2 grid of
/// `f32[4,8] @ f32[8,4]` blocks into `f32[4,4]`.
#[test]
fn a_kernel_counts_its_body_per_grid_point_and_its_blocks() {
    let text =
        std::fs::read_to_string(data().join("pallas/jax-0.10.2/matmul_blocked.jaxpr")).unwrap();
    let c = costed(&text, LoopCount::Iterations);
    let main = c.analysis.main().unwrap();
    let call = c.analysis.jaxpr(main).eqns[0];
    let kernel = JaxprId(c.analysis.eqn(call).callees[0].1.0);
    let body = c.cost.jaxpr(kernel).total.clone();
    assert_eq!(constant(&body.flops), 2 * 4 * 4 * 8);
    let points = 4;
    let blocks = 4 * (4 * 8 + 8 * 4 + 4 * 4);
    let total = &c.cost.eqn(call).total;
    assert_eq!(constant(&total.flops), points * constant(&body.flops));
    assert_eq!(
        constant(&total.bytes_accessed),
        points * (constant(&body.bytes_accessed) + blocks)
    );
}

/// Every JAX version's `add_grid` (a grid of 4 points adding two
/// `f32[2,16]` blocks): the kernel's 32 FLOPs per point, and the blocks'
/// bytes known, whether the version prints `grid_mapping` as a call the
/// parser reads or as text it keeps (some 0.4 and 0.5 releases).
#[test]
fn every_version_s_kernel_is_counted_per_grid_point() {
    let mut versions = 0;
    for entry in std::fs::read_dir(data().join("pallas")).unwrap() {
        let path = entry.unwrap().path().join("add_grid.jaxpr");
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        versions += 1;
        let c = costed(&text, LoopCount::Iterations);
        let total = &c.main().total;
        assert_eq!(
            total.flops.as_constant(),
            Some(4 * 32),
            "{}",
            path.display()
        );
        let block = 2 * 16 * 4;
        assert!(
            total.bytes_accessed.as_constant().unwrap_or(0) >= 4 * 3 * block,
            "{}: {}",
            path.display(),
            total.bytes_accessed
        );
    }
    assert!(versions >= 8, "{versions}");
}
