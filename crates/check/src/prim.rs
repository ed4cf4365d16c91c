//! Generated from the primitive registry (`registry.rs`'s `PRIMITIVES`) by
//! `UPDATE_DOCS=1 cargo test -p jaxpr-check registry`; do not edit by hand.

/// A primitive of the registry: the typed handle every layer dispatches on
/// ([`Prim::row`] is its row, [`Prim::from_name`] reads a printed name or
/// alias). One variant per row, in the table's order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u16)]
pub enum Prim {
    /// `abs`
    Abs,
    /// `acos`
    Acos,
    /// `acosh`
    Acosh,
    /// `add`
    Add,
    /// `add_any`
    AddAny,
    /// `and`
    And,
    /// `approx_top_k`
    ApproxTopK,
    /// `argmax`
    Argmax,
    /// `argmin`
    Argmin,
    /// `asin`
    Asin,
    /// `asinh`
    Asinh,
    /// `atan`
    Atan,
    /// `atan2`
    Atan2,
    /// `atanh`
    Atanh,
    /// `bessel_i0e`
    BesselI0e,
    /// `bessel_i1e`
    BesselI1e,
    /// `bitcast_convert_type`
    BitcastConvertType,
    /// `broadcast_in_dim`
    BroadcastInDim,
    /// `cbrt`
    Cbrt,
    /// `ceil`
    Ceil,
    /// `checkpoint`
    Checkpoint,
    /// `cholesky`
    Cholesky,
    /// `clamp`
    Clamp,
    /// `closed_call`
    ClosedCall,
    /// `clz`
    Clz,
    /// `complex`
    Complex,
    /// `composite`
    Composite,
    /// `concatenate`
    Concatenate,
    /// `cond`
    Cond,
    /// `conj`
    Conj,
    /// `constant`
    Constant,
    /// `conv_general_dilated`
    ConvGeneralDilated,
    /// `convert_element_type`
    ConvertElementType,
    /// `copy`
    Copy,
    /// `core_call`
    CoreCall,
    /// `cos`
    Cos,
    /// `cosh`
    Cosh,
    /// `cumlogsumexp`
    Cumlogsumexp,
    /// `cummax`
    Cummax,
    /// `cummin`
    Cummin,
    /// `cumprod`
    Cumprod,
    /// `cumsum`
    Cumsum,
    /// `custom_jvp_call`
    CustomJvpCall,
    /// `custom_lin`
    CustomLin,
    /// `custom_linear_solve`
    CustomLinearSolve,
    /// `custom_vjp_call`
    CustomVjpCall,
    /// `custom_vjp_call_jaxpr`
    CustomVjpCallJaxpr,
    /// `device_put`
    DevicePut,
    /// `digamma`
    Digamma,
    /// `dim_as_value`
    DimAsValue,
    /// `div`
    Div,
    /// `dot_general`
    DotGeneral,
    /// `dynamic_slice`
    DynamicSlice,
    /// `dynamic_update_slice`
    DynamicUpdateSlice,
    /// `eig`
    Eig,
    /// `eigh`
    Eigh,
    /// `empty2`
    Empty2,
    /// `eq`
    Eq,
    /// `erf`
    Erf,
    /// `erf_inv`
    ErfInv,
    /// `erfc`
    Erfc,
    /// `exp`
    Exp,
    /// `exp2`
    Exp2,
    /// `expand_dims`
    ExpandDims,
    /// `expm1`
    Expm1,
    /// `fft`
    Fft,
    /// `floor`
    Floor,
    /// `for_loop`
    ForLoop,
    /// `gather`
    Gather,
    /// `ge`
    Ge,
    /// `geqrf`
    Geqrf,
    /// `gt`
    Gt,
    /// `hessenberg`
    Hessenberg,
    /// `igamma`
    Igamma,
    /// `igammac`
    Igammac,
    /// `imag`
    Imag,
    /// `integer_pow`
    IntegerPow,
    /// `iota`
    Iota,
    /// `iota_2x32_shape`
    Iota2x32Shape,
    /// `is_finite`
    IsFinite,
    /// `jit`
    Jit,
    /// `le`
    Le,
    /// `le_to`
    LeTo,
    /// `lgamma`
    Lgamma,
    /// `log`
    Log,
    /// `log1p`
    Log1p,
    /// `logistic`
    Logistic,
    /// `lt`
    Lt,
    /// `lt_to`
    LtTo,
    /// `lu`
    Lu,
    /// `lu_pivots_to_permutation`
    LuPivotsToPermutation,
    /// `max`
    Max,
    /// `mesh_cast`
    MeshCast,
    /// `min`
    Min,
    /// `mul`
    Mul,
    /// `mulhi`
    Mulhi,
    /// `ne`
    Ne,
    /// `neg`
    Neg,
    /// `nextafter`
    Nextafter,
    /// `not`
    Not,
    /// `optimization_barrier`
    OptimizationBarrier,
    /// `or`
    Or,
    /// `ormqr`
    Ormqr,
    /// `pad`
    Pad,
    /// `platform_index`
    PlatformIndex,
    /// `population_count`
    PopulationCount,
    /// `pow`
    Pow,
    /// `psum`
    Psum,
    /// `all_gather`
    AllGather,
    /// `all_gather_invariant`
    AllGatherInvariant,
    /// `all_to_all`
    AllToAll,
    /// `axis_index`
    AxisIndex,
    /// `pbroadcast`
    Pbroadcast,
    /// `pmax`
    Pmax,
    /// `pmin`
    Pmin,
    /// `ppermute`
    Ppermute,
    /// `psum2`
    Psum2,
    /// `psum_invariant`
    PsumInvariant,
    /// `pvary`
    Pvary,
    /// `reduce_scatter`
    ReduceScatter,
    /// `qr`
    Qr,
    /// `ragged_dot_general`
    RaggedDotGeneral,
    /// `random_bits`
    RandomBits,
    /// `random_clone`
    RandomClone,
    /// `random_fold_in`
    RandomFoldIn,
    /// `random_gamma`
    RandomGamma,
    /// `random_seed`
    RandomSeed,
    /// `random_split`
    RandomSplit,
    /// `random_unwrap`
    RandomUnwrap,
    /// `random_wrap`
    RandomWrap,
    /// `real`
    Real,
    /// `reduce`
    Reduce,
    /// `reduce_and`
    ReduceAnd,
    /// `reduce_max`
    ReduceMax,
    /// `reduce_min`
    ReduceMin,
    /// `reduce_or`
    ReduceOr,
    /// `reduce_precision`
    ReducePrecision,
    /// `reduce_prod`
    ReduceProd,
    /// `reduce_sum`
    ReduceSum,
    /// `reduce_window`
    ReduceWindow,
    /// `reduce_window_max`
    ReduceWindowMax,
    /// `reduce_window_min`
    ReduceWindowMin,
    /// `reduce_window_sum`
    ReduceWindowSum,
    /// `reduce_xor`
    ReduceXor,
    /// `regularized_incomplete_beta`
    RegularizedIncompleteBeta,
    /// `rem`
    Rem,
    /// `reshape`
    Reshape,
    /// `reshard`
    Reshard,
    /// `rev`
    Rev,
    /// `rng_bit_generator`
    RngBitGenerator,
    /// `rng_uniform`
    RngUniform,
    /// `round`
    Round,
    /// `rsqrt`
    Rsqrt,
    /// `runtime_error`
    RuntimeError,
    /// `scan`
    Scan,
    /// `scatter`
    Scatter,
    /// `scatter-add`
    ScatterAdd,
    /// `scatter-apply`
    ScatterApply,
    /// `scatter-max`
    ScatterMax,
    /// `scatter-min`
    ScatterMin,
    /// `scatter-mul`
    ScatterMul,
    /// `scatter-sub`
    ScatterSub,
    /// `schur`
    Schur,
    /// `select_and_gather_add`
    SelectAndGatherAdd,
    /// `select_and_scatter_add`
    SelectAndScatterAdd,
    /// `select_n`
    SelectN,
    /// `shard_map`
    ShardMap,
    /// `sharding_constraint`
    ShardingConstraint,
    /// `shift_left`
    ShiftLeft,
    /// `shift_right_arithmetic`
    ShiftRightArithmetic,
    /// `shift_right_logical`
    ShiftRightLogical,
    /// `sign`
    Sign,
    /// `sin`
    Sin,
    /// `sinh`
    Sinh,
    /// `slice`
    Slice,
    /// `sort`
    Sort,
    /// `split`
    Split,
    /// `sqrt`
    Sqrt,
    /// `square`
    Square,
    /// `squeeze`
    Squeeze,
    /// `stack`
    Stack,
    /// `stop_gradient`
    StopGradient,
    /// `sub`
    Sub,
    /// `svd`
    Svd,
    /// `tan`
    Tan,
    /// `tanh`
    Tanh,
    /// `threefry2x32`
    Threefry2x32,
    /// `tile`
    Tile,
    /// `top_k`
    TopK,
    /// `transpose`
    Transpose,
    /// `triangular_solve`
    TriangularSolve,
    /// `tridiagonal_solve`
    TridiagonalSolve,
    /// `unstack`
    Unstack,
    /// `while`
    While,
    /// `while_loop`
    WhileLoop,
    /// `xla_call`
    XlaCall,
    /// `xla_pmap`
    XlaPmap,
    /// `xor`
    Xor,
    /// `adjoint`
    Adjoint,
    /// `compbasis`
    Compbasis,
    /// `counts`
    Counts,
    /// `device_init`
    DeviceInit,
    /// `device_release`
    DeviceRelease,
    /// `expval`
    Expval,
    /// `func`
    Func,
    /// `gphase`
    Gphase,
    /// `grad`
    Grad,
    /// `hamiltonian`
    Hamiltonian,
    /// `hermitian`
    Hermitian,
    /// `mcmobs`
    Mcmobs,
    /// `measure`
    Measure,
    /// `namedobs`
    Namedobs,
    /// `num_qubits`
    NumQubits,
    /// `probs`
    Probs,
    /// `qalloc`
    Qalloc,
    /// `qdealloc`
    Qdealloc,
    /// `qdealloc_qb`
    QdeallocQb,
    /// `qdevice`
    Qdevice,
    /// `qextract`
    Qextract,
    /// `qinsert`
    Qinsert,
    /// `qinst`
    Qinst,
    /// `quantum_kernel`
    QuantumKernel,
    /// `sample`
    Sample,
    /// `set_basis_state`
    SetBasisState,
    /// `state`
    State,
    /// `state_prep`
    StatePrep,
    /// `tensorobs`
    Tensorobs,
    /// `unitary`
    Unitary,
    /// `value_and_grad`
    ValueAndGrad,
    /// `var`
    Var,
    /// `get`
    Get,
    /// `swap`
    Swap,
    /// `addupdate`
    Addupdate,
    /// `masked_load`
    MaskedLoad,
    /// `masked_swap`
    MaskedSwap,
    /// `new_ref`
    NewRef,
    /// `freeze`
    Freeze,
    /// `run_state`
    RunState,
    /// `for`
    For,
    /// `pallas_call`
    PallasCall,
    /// `program_id`
    ProgramId,
    /// `num_programs`
    NumPrograms,
}

impl Prim {
    /// Every primitive, in the registry's order.
    pub const ALL: [Prim; 242] = [
        Prim::Abs,
        Prim::Acos,
        Prim::Acosh,
        Prim::Add,
        Prim::AddAny,
        Prim::And,
        Prim::ApproxTopK,
        Prim::Argmax,
        Prim::Argmin,
        Prim::Asin,
        Prim::Asinh,
        Prim::Atan,
        Prim::Atan2,
        Prim::Atanh,
        Prim::BesselI0e,
        Prim::BesselI1e,
        Prim::BitcastConvertType,
        Prim::BroadcastInDim,
        Prim::Cbrt,
        Prim::Ceil,
        Prim::Checkpoint,
        Prim::Cholesky,
        Prim::Clamp,
        Prim::ClosedCall,
        Prim::Clz,
        Prim::Complex,
        Prim::Composite,
        Prim::Concatenate,
        Prim::Cond,
        Prim::Conj,
        Prim::Constant,
        Prim::ConvGeneralDilated,
        Prim::ConvertElementType,
        Prim::Copy,
        Prim::CoreCall,
        Prim::Cos,
        Prim::Cosh,
        Prim::Cumlogsumexp,
        Prim::Cummax,
        Prim::Cummin,
        Prim::Cumprod,
        Prim::Cumsum,
        Prim::CustomJvpCall,
        Prim::CustomLin,
        Prim::CustomLinearSolve,
        Prim::CustomVjpCall,
        Prim::CustomVjpCallJaxpr,
        Prim::DevicePut,
        Prim::Digamma,
        Prim::DimAsValue,
        Prim::Div,
        Prim::DotGeneral,
        Prim::DynamicSlice,
        Prim::DynamicUpdateSlice,
        Prim::Eig,
        Prim::Eigh,
        Prim::Empty2,
        Prim::Eq,
        Prim::Erf,
        Prim::ErfInv,
        Prim::Erfc,
        Prim::Exp,
        Prim::Exp2,
        Prim::ExpandDims,
        Prim::Expm1,
        Prim::Fft,
        Prim::Floor,
        Prim::ForLoop,
        Prim::Gather,
        Prim::Ge,
        Prim::Geqrf,
        Prim::Gt,
        Prim::Hessenberg,
        Prim::Igamma,
        Prim::Igammac,
        Prim::Imag,
        Prim::IntegerPow,
        Prim::Iota,
        Prim::Iota2x32Shape,
        Prim::IsFinite,
        Prim::Jit,
        Prim::Le,
        Prim::LeTo,
        Prim::Lgamma,
        Prim::Log,
        Prim::Log1p,
        Prim::Logistic,
        Prim::Lt,
        Prim::LtTo,
        Prim::Lu,
        Prim::LuPivotsToPermutation,
        Prim::Max,
        Prim::MeshCast,
        Prim::Min,
        Prim::Mul,
        Prim::Mulhi,
        Prim::Ne,
        Prim::Neg,
        Prim::Nextafter,
        Prim::Not,
        Prim::OptimizationBarrier,
        Prim::Or,
        Prim::Ormqr,
        Prim::Pad,
        Prim::PlatformIndex,
        Prim::PopulationCount,
        Prim::Pow,
        Prim::Psum,
        Prim::AllGather,
        Prim::AllGatherInvariant,
        Prim::AllToAll,
        Prim::AxisIndex,
        Prim::Pbroadcast,
        Prim::Pmax,
        Prim::Pmin,
        Prim::Ppermute,
        Prim::Psum2,
        Prim::PsumInvariant,
        Prim::Pvary,
        Prim::ReduceScatter,
        Prim::Qr,
        Prim::RaggedDotGeneral,
        Prim::RandomBits,
        Prim::RandomClone,
        Prim::RandomFoldIn,
        Prim::RandomGamma,
        Prim::RandomSeed,
        Prim::RandomSplit,
        Prim::RandomUnwrap,
        Prim::RandomWrap,
        Prim::Real,
        Prim::Reduce,
        Prim::ReduceAnd,
        Prim::ReduceMax,
        Prim::ReduceMin,
        Prim::ReduceOr,
        Prim::ReducePrecision,
        Prim::ReduceProd,
        Prim::ReduceSum,
        Prim::ReduceWindow,
        Prim::ReduceWindowMax,
        Prim::ReduceWindowMin,
        Prim::ReduceWindowSum,
        Prim::ReduceXor,
        Prim::RegularizedIncompleteBeta,
        Prim::Rem,
        Prim::Reshape,
        Prim::Reshard,
        Prim::Rev,
        Prim::RngBitGenerator,
        Prim::RngUniform,
        Prim::Round,
        Prim::Rsqrt,
        Prim::RuntimeError,
        Prim::Scan,
        Prim::Scatter,
        Prim::ScatterAdd,
        Prim::ScatterApply,
        Prim::ScatterMax,
        Prim::ScatterMin,
        Prim::ScatterMul,
        Prim::ScatterSub,
        Prim::Schur,
        Prim::SelectAndGatherAdd,
        Prim::SelectAndScatterAdd,
        Prim::SelectN,
        Prim::ShardMap,
        Prim::ShardingConstraint,
        Prim::ShiftLeft,
        Prim::ShiftRightArithmetic,
        Prim::ShiftRightLogical,
        Prim::Sign,
        Prim::Sin,
        Prim::Sinh,
        Prim::Slice,
        Prim::Sort,
        Prim::Split,
        Prim::Sqrt,
        Prim::Square,
        Prim::Squeeze,
        Prim::Stack,
        Prim::StopGradient,
        Prim::Sub,
        Prim::Svd,
        Prim::Tan,
        Prim::Tanh,
        Prim::Threefry2x32,
        Prim::Tile,
        Prim::TopK,
        Prim::Transpose,
        Prim::TriangularSolve,
        Prim::TridiagonalSolve,
        Prim::Unstack,
        Prim::While,
        Prim::WhileLoop,
        Prim::XlaCall,
        Prim::XlaPmap,
        Prim::Xor,
        Prim::Adjoint,
        Prim::Compbasis,
        Prim::Counts,
        Prim::DeviceInit,
        Prim::DeviceRelease,
        Prim::Expval,
        Prim::Func,
        Prim::Gphase,
        Prim::Grad,
        Prim::Hamiltonian,
        Prim::Hermitian,
        Prim::Mcmobs,
        Prim::Measure,
        Prim::Namedobs,
        Prim::NumQubits,
        Prim::Probs,
        Prim::Qalloc,
        Prim::Qdealloc,
        Prim::QdeallocQb,
        Prim::Qdevice,
        Prim::Qextract,
        Prim::Qinsert,
        Prim::Qinst,
        Prim::QuantumKernel,
        Prim::Sample,
        Prim::SetBasisState,
        Prim::State,
        Prim::StatePrep,
        Prim::Tensorobs,
        Prim::Unitary,
        Prim::ValueAndGrad,
        Prim::Var,
        Prim::Get,
        Prim::Swap,
        Prim::Addupdate,
        Prim::MaskedLoad,
        Prim::MaskedSwap,
        Prim::NewRef,
        Prim::Freeze,
        Prim::RunState,
        Prim::For,
        Prim::PallasCall,
        Prim::ProgramId,
        Prim::NumPrograms,
    ];
}
