//! Mutable references and Pallas kernels as fixtures: the type of a load
//! (`y:T <- r[idx]`) is the indexed block's, a stored value must be the
//! block's, and a `pallas_call`'s kernel takes references to the blocks of
//! its `grid_mapping` (J0021 block-shape). Each jaxpr is as JAX 0.10.2
//! prints it (tests/data/pallas), edited where a diagnostic is expected.

use jaxpr_test_support::fixture::Fixture;

fn check(fixture: &str) {
    Fixture::assert_check(fixture);
}

#[test]
fn a_load_has_the_indexed_blocks_type() {
    check(
        r#"{ lambda ; a:f32[3,4] b:i32[]. let
    c:Ref{f32[3,4]} = new_ref[kind=None memory_space=None] a
    d:f32[4] <- c[0,:]
    e:f32[2,4] <- c[b:b+2,:]
    f:f32[3] <- c[:,b]
    g:f32[2,3] <- c[1:3,1:]
    h:f32[2,4] <- c[1:3,1:]
#           ^ error[J0004]: `h` is declared f32[2,4], but `get` produces f32[2,3]: dimension 1 is 4 here but 3 by inference
    i:f32[3,4] = freeze c
  in (d, e, f, g, h, i) }
"#,
    );
}

#[test]
fn a_stored_value_must_be_the_blocks_type() {
    check(
        r#"{ lambda ; a:f32[3,4] b:f32[3]. let
    c:Ref{f32[3,4]} = new_ref[kind=None memory_space=None] a
    c[0,:] <- b
#          ^^ error[J0004]: the value stored in `c` must be f32[4], the type of the indexed block, but it is f32[3]
    c[...] += a
    d:f32[4], c[1,:] <- c[1,:], a
#                    ^^ error[J0004]: the value stored in `c` must be f32[4], the type of the indexed block, but it is f32[3,4]
    e:f32[3,4] = freeze c
  in (e,) }
"#,
    );
}

#[test]
fn an_index_must_be_an_integer_and_a_ref_a_ref() {
    check(
        r#"{ lambda ; a:f32[3,4] b:f32[]. let
    c:Ref{f32[3,4]} = new_ref[kind=None memory_space=None] a
    d:f32[4] <- c[b,:]
#            ^^ error[J0005]: an index must be of an integer dtype, but it is `b` (f32[])
    e:f32[4] <- a[0,:]
#            ^^ error[J0005]: `a` in `a` must be a reference (`Ref{...}`), but it is `a` (f32[3,4])
    f:f32[3,4] = freeze c
  in (f,) }
"#,
    );
}

#[test]
fn a_kernel_takes_references_to_its_blocks() {
    check(
        r#"{ lambda ; a:f32[8,8] b:f32[8,8]. let
    c:f32[8,8] = pallas_call[
      compiler_params=None
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(2, 2), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=4), Blocked(block_size=8))), BlockMapping(block_shape=(Blocked(block_size=8), Blocked(block_size=4))), BlockMapping(block_shape=(Blocked(block_size=4), Blocked(block_size=4)))))
      input_output_aliases=()
      interpret=True
      jaxpr={ lambda ; d:Ref<default>{f32[4,8]} e:Ref<default>{f32[8,8]} f:Ref<default>{f32[4,4]}. let
#                                               ^ error[J0021]: kernel reference `e` is Ref<default>{f32[8,8]}, but it refers to a block of operand 1: a reference to f32[8,4]
          g:f32[4,8] <- d[...]
          h:f32[8,8] <- e[...]
          i:f32[4,8] = dot_general[
            dimension_numbers=(([1], [0]), ([], []))
            preferred_element_type=float32
          ] g h
          j:f32[4,4] = slice[limit_indices=(4, 4) start_indices=(0, 0) strides=None] i
          k:f32[4,4], f[...] <- f[...], j
        in () }
      mesh=None
      metadata=None
      name=None
      out_avals=(ShapedArray(float32[8,8]),)
    ] a b
  in (c,) }
"#,
    );
}

#[test]
fn a_block_shape_has_its_arrays_rank() {
    check(
        r#"{ lambda ; a:f32[8,16]. let
    b:f32[8,16] = pallas_call[
      grid_mapping=GridMapping(grid=(4,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=2),)), BlockMapping(block_shape=(Blocked(block_size=2), Blocked(block_size=16)))))
#                                                         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[J0021]: the block shape of operand 0 has 1 dimension, but operand 0 is f32[8,16] of rank 2
      interpret=True
      jaxpr={ lambda ; c:Ref<default>{f32[2]} d:Ref<default>{f32[2,16]}. let
          e:f32[2,16] = broadcast_in_dim[broadcast_dimensions=() shape=(2, 16) sharding=None] 0.0:f32[]
          d[...] <- e
        in () }
    ] a
  in (b,) }
"#,
    );
}

#[test]
fn program_id_is_an_i32_scalar() {
    check(
        r#"{ lambda ; a:f32[4,4]. let
    b:f32[4,4] = pallas_call[
      grid_mapping=GridMapping(grid=(4,), block_mappings=(BlockMapping(block_shape=(Blocked(block_size=1), Blocked(block_size=4))), BlockMapping(block_shape=(Blocked(block_size=1), Blocked(block_size=4)))))
      interpret=True
      jaxpr={ lambda ; c:Ref<default>{f32[1,4]} d:Ref<default>{f32[1,4]}. let
          e:i32[] = program_id[axis=0] 
          f:i64[] = num_programs[axis=0] 
#           ^^^^^ error[J0005]: `f` is declared i64[], but `num_programs` produces i32[]
          g:f32[1,4] <- c[...]
          h:f32[] = convert_element_type[new_dtype=float32 weak_type=False] e
          i:f32[1,4] = mul g h
          d[...] <- i
        in () }
    ] a
  in (b,) }
"#,
    );
}

/// JAX 0.4.38 to 0.5 print each `BlockMapping` with its block aval
/// (`MemRef<None>{float32[8,16]}`), its index map's source (`<lambda> at
/// FILE:LINE`) and its grid's avals (`ShapedArray(int32[])`), and a
/// vmapped dimension as `Mapped`: the block shapes are read from it all.
#[test]
fn a_kernel_as_jax_0_4_38_prints_it_takes_references_to_its_blocks() {
    check(
        r#"{ lambda ; a:f32[3,8,16] b:f32[3,8,16]. let
    c:f32[3,8,16] = pallas_call[
      backend=None
      compiler_params={}
      cost_estimate=None
      debug=False
      grid_mapping=GridMapping(grid=(3,), grid_names=None, block_mappings=(BlockMapping(block_shape=(Mapped, 8, 16), transformed_block_aval=MemRef<None>{float32[8,16]}, index_map_jaxpr={ lambda ; a:i32[]. let  in (a, 0, 0) }, index_map_src_info=<lambda> at /site-packages/jax/_src/pallas/core.py:389, indexing_mode=Blocked, array_shape_dtype=ShapeDtypeStruct(shape=(3, 8, 16), dtype=float32), origin='x_ref', transforms=()), BlockMapping(block_shape=(Mapped, 4, 16), transformed_block_aval=MemRef<None>{float32[4,16]}, index_map_jaxpr={ lambda ; a:i32[]. let  in (a, 0, 0) }, index_map_src_info=<lambda> at /site-packages/jax/_src/pallas/core.py:389, indexing_mode=Blocked, array_shape_dtype=ShapeDtypeStruct(shape=(3, 8, 16), dtype=float32), origin='y_ref', transforms=()), BlockMapping(block_shape=(Mapped, 8, 16), transformed_block_aval=MemRef<None>{float32[8,16]}, index_map_jaxpr={ lambda ; a:i32[]. let  in (a, 0, 0) }, index_map_src_info=<lambda> at /site-packages/jax/_src/pallas/core.py:389, indexing_mode=Blocked, array_shape_dtype=ShapeDtypeStruct(shape=(3, 8, 16), dtype=float32), origin='outputs', transforms=())), index_map_tree=PyTreeDef(((*,), {})), index_map_avals=(ShapedArray(int32[]),), vmapped_dims=(0,), num_index_operands=0, num_inputs=2, num_outputs=1, num_scratch_operands=0, get_grid_indices=None, local_grid_env=None)
      input_output_aliases=()
      interpret=True
      jaxpr={ lambda ; d:MemRef<None>{float32[8,16]} e:MemRef<None>{float32[8,16]}
#                                                    ^ error[J0021]: kernel reference `e` is MemRef<None>{f32[8,16]}, but it refers to a block of operand 1: a reference to f32[4,16]
          f:MemRef<None>{float32[8,16]}. let
          g:f32[8,16] <- d[:,:]
          h:f32[8,16] <- e[:,:]
          i:f32[8,16] = add g h
          f[:,:] <- i
        in () }
      name_and_src_info=kernel_batched at /corpus-gen/pallas/programs.py:53
      out_avals=(ShapedArray(float32[3,8,16]),)
    ] a b
  in (c,) }
"#,
    );
}

#[test]
fn an_index_map_takes_the_grid_point_and_gives_a_block_index_per_dimension() {
    check(
        r#"{ lambda ; a:f32[8,16]. let
    b:f32[8,16] = pallas_call[
      grid_mapping=GridMapping(grid=(4, 2), block_mappings=(BlockMapping(block_shape=(2, 8), index_map_jaxpr={ lambda ; c:i32[]. let  in (c, 0) }), BlockMapping(block_shape=(2, 8), index_map_jaxpr={ lambda ; c:i32[] d:i32[]. let  in (c,) })), mapped_dims=(), num_index_operands=0, num_scratch_operands=0, num_constant_operands=0)
#                                                                                                            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[J0022]: the index map of operand 0 takes 1 index, but the grid has 2 axes
      interpret=True
      jaxpr={ lambda ; e:MemRef<None>{float32[2,8]} f:MemRef<None>{float32[2,8]}. let
          g:f32[2,8] <- e[:,:]
          f[:,:] <- g
        in () }
    ] a
  in (b,) }
"#,
    );
}

#[test]
fn an_index_map_gives_blocks_inside_its_array_at_every_grid_point() {
    // Element offsets instead of block indices along the columns: the
    // second axis of the grid reaches block 1 of 1.
    check(
        r#"{ lambda ; a:f32[8,16]. let
    b:f32[8,16] = pallas_call[
      grid_mapping=GridMapping(grid=(4, 2), block_mappings=(BlockMapping(block_shape=(2, 16), index_map_jaxpr={ lambda ; c:i32[] d:i32[]. let  in (c, d) }), BlockMapping(block_shape=(2, 16), index_map_jaxpr={ lambda ; c:i32[] d:i32[]. let  in (c, 0) })), mapped_dims=(), num_index_operands=0, num_scratch_operands=0, num_constant_operands=0)
#                                                                                                                                                     ^ warning[J0014]: at grid point (0, 1) the index map of operand 0 gives block 1 of dimension 1, but operand 0 has 1 block of 16 there (blocks 0 to 0)
      interpret=True
      jaxpr={ lambda ; e:MemRef<None>{float32[2,16]} f:MemRef<None>{float32[2,16]}. let
          g:f32[2,16] <- e[:,:]
          f[:,:] <- g
        in () }
    ] a
  in (b,) }
"#,
    );
}
