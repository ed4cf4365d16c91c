//! What JAX's own dead-code elimination (`pe.dce_jaxpr`) drops before
//! lowering is not counted: XLA never sees it.

use jaxpr_cost::{Options, analyse};

/// FLOPs and bytes accessed of `text`'s main jaxpr.
fn main_cost(text: &str) -> (Option<i64>, Option<i64>) {
    let parse = jaxpr_syntax::parse(text);
    assert!(parse.errors.is_empty(), "{:?}", parse.errors);
    let analysis = jaxpr_check::check(&parse.file);
    let main = analysis
        .jaxprs
        .iter()
        .position(|j| j.parent.is_none())
        .expect("a main jaxpr");
    let cost = analyse(&parse.file, &analysis, Options::default());
    let total = &cost.jaxpr(jaxpr_check::JaxprId(main as u32)).total;
    (
        total.flops.as_constant(),
        total.bytes_accessed.as_constant(),
    )
}

/// A `cond` without results whose branch runs a `while` nothing reads has
/// no effect: JAX drops the `while` (it has no DCE rule of its own, and the
/// default one drops an equation without effects whose results nothing
/// reads), then the `cond` (its rule does the same), then what computed its
/// predicate. XLA's cost analysis of jax 0.10.2's lowering counts nothing
/// (`corpus-gen/cost_random`, seed 2000325: 0 FLOPs, 0 bytes).
#[test]
fn a_cond_whose_branch_only_loops_is_dropped_with_its_predicate() {
    let text = "{ lambda ; a:f16[]. let
    b:f32[] = convert_element_type[new_dtype=float32 weak_type=False] a
    c:f32[] = reduce_sum[axes=() out_sharding=None] b
    d:f16[] = convert_element_type[new_dtype=float16 weak_type=False] c
    e:bool[] = gt d 1.0:f16[]
    f:i32[] = convert_element_type[new_dtype=int32 weak_type=False] e
    cond[
      branches=(
        { lambda ; g:f16[]. let  in () }
        { lambda ; h:f16[]. let
            i:i32[] j:i32[] = while[
              body_jaxpr={ lambda ; k:f16[] l:i32[] m:i32[]. let
                  n:i32[] = add l 1:i32[]
                  o:f16[4] = iota[dimension=0 dtype=float16 shape=(4,) sharding=None] 
                  p:f16[4] = add k o
                in (n, m) }
              body_nconsts=1
              cond_jaxpr={ lambda ; q:i32[] r:i32[]. let
                  s:bool[] = lt q r
                in (s,) }
              cond_nconsts=0
            ] h 0:i32[] 1:i32[]
          in () }
      )
    ] f a
  in (a,) }";
    assert_eq!(main_cost(text), (Some(0), Some(0)));
}
