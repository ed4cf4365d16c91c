//! The code generator of one library ([`Codegen`]): the run-time arrays it
//! passes between equations, and the LLVM IR helpers every lowering uses.

use crate::ERR_LEN;
use crate::calls;
use crate::fusion;
use crate::memory;
use crate::segments;
use crate::vmath;
use inkwell::basic_block::BasicBlock;
use inkwell::builder::Builder;
use inkwell::context::Context;
use inkwell::module::{Linkage, Module};
use inkwell::types::{BasicMetadataTypeEnum, BasicType, BasicTypeEnum};
use inkwell::values::{
    BasicMetadataValueEnum, BasicValueEnum, FunctionValue, GlobalValue, IntValue, PointerValue,
};
use inkwell::{AddressSpace, IntPredicate};
use jaxpr_check::{Analysis, JaxprId};
use jaxpr_lower::{EqnCx, LowerResult, Operand, Syntax, err};
use jaxpr_syntax::TextRange;
use jaxpr_syntax::ast::{self};
use jaxpr_types::poly::Symbol;
use jaxpr_types::{AType, DType, FloatKind, VarId};
use rustc_hash::FxHashMap as HashMap;
use std::cell::{Cell, RefCell};

/// A run-time array: its data and its extents.
#[derive(Clone, Debug)]
pub(crate) struct Arr<'c> {
    pub p: PointerValue<'c>,
    pub dims: Vec<IntValue<'c>>,
    /// A deferred computation standing for the array (see [`fusion`]):
    /// its key in [`Codegen`]'s `deferred`; `p` is then not data.
    pub lazy: Option<usize>,
}

impl<'c> Arr<'c> {
    pub fn new(p: PointerValue<'c>, dims: Vec<IntValue<'c>>) -> Self {
        Arr {
            p,
            dims,
            lazy: None,
        }
    }
}

pub(crate) type Op<'c> = Operand<Arr<'c>>;
pub(crate) type Cx<'e, 'c> = EqnCx<'e, Arr<'c>>;

/// Values in scope: the jaxpr's variables and the symbolic dimensions.
#[derive(Clone, Default)]
pub(crate) struct Env<'c> {
    pub(crate) vals: HashMap<VarId, Op<'c>>,
    pub(crate) syms: HashMap<Symbol, IntValue<'c>>,
}

/// Where a buffer's pointer is kept between its uses ([`Codegen::reloaded`]).
#[derive(Clone, Copy)]
pub(crate) enum Home<'c> {
    /// A stack word of its own.
    Slot(PointerValue<'c>),
    /// The caller's `inputs[k].data` (an input's data).
    Input(i64),
    /// A word of the buffer table, by index ([`memory`]).
    Table(u64),
}

/// Failure exits of a function by the buffers they give back.
pub(crate) type Unwinds<'c> = HashMap<Vec<PointerValue<'c>>, BasicBlock<'c>>;

/// What LLVM may do to unroll a loop the back end builds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unroll {
    /// LLVM's own heuristics: loops over windows and tiles, whose small
    /// constant trip counts unroll into straight code worth having.
    AsLlvmChooses,
    /// No unrolling: loops over an array's elements, whose speed comes
    /// from the vectorizer (which still interleaves them). Fully
    /// unrolled, a kernel over a small array grows to hundreds of
    /// instructions that every later pass and the code generator pay for.
    Never,
}

/// The code generator of one library.
pub(crate) struct Codegen<'c, 'f> {
    /// LLVM's context, the module being built, and the builder's
    /// insertion point.
    pub context: &'c Context,
    pub module: Module<'c>,
    pub builder: Builder<'c>,
    /// What the checker worked out about the program, and its syntax.
    pub analysis: &'f Analysis,
    pub(crate) syntax: Syntax<'f>,
    pub(crate) lib: Library,
    pub(crate) fun: FunctionState<'c, 'f>,
    pub(crate) items: ModuleItems<'c>,
    pub(crate) fusion: Fusion<'c, 'f>,
    pub(crate) quantum: QuantumState,
}

/// What the library is built as and for: its name, the target processor, the
/// settings the program ran with, and the runtimes it calls.
pub(crate) struct Library {
    pub(crate) name: String,
    /// The build's `jax_threefry_partitionable` ([`crate::Options`]).
    pub(crate) threefry: jaxpr_lower::random::Threefry,
    /// libmvec's vector ISAs for the processor the library is for
    /// ([`vmath`]), found once per build.
    pub(crate) vector_isas: &'static [(char, u32)],
    /// Catalyst's runtime, for a quantum program ([`crate::quantum`]).
    pub(crate) catalyst: Option<crate::catalyst::Runtime>,
    /// The seed of a quantum program's measurements (`qjit(seed=...)`).
    pub(crate) quantum_seed: Option<u32>,
    /// What a multi-device program needs of MPI ([`crate::mpi`]).
    pub(crate) mpi: Option<crate::mpi::Plan>,
    /// The entry taking each rank's own blocks ([`crate::mpi`]'s
    /// `shards_exports`).
    pub(crate) shards: crate::mpi::ShardsEntry,
}

/// The function being built: its failure exits, open scopes and loops, the
/// entry point's buffer table and parameters, and the equation being lowered.
pub(crate) struct FunctionState<'c, 'f> {
    pub(crate) func: Cell<Option<FunctionValue<'c>>>,
    pub(crate) err_buf: Cell<Option<GlobalValue<'c>>>,
    /// Buffers allocated in each open scope, innermost last.
    pub(crate) scopes: RefCell<Vec<Vec<PointerValue<'c>>>>,
    /// Failure exits by the buffers they give back ([`Codegen::unwind_block`]).
    pub(crate) unwinds: RefCell<Unwinds<'c>>,
    /// State arrays of the loops being built, innermost last.
    pub(crate) loop_states: RefCell<Vec<Vec<PointerValue<'c>>>>,
    /// The entry point's `inputs` and `outputs` parameters, in the
    /// function being built of those it is split into ([`segments`]).
    pub(crate) io: Cell<Option<(PointerValue<'c>, PointerValue<'c>)>>,
    pub(crate) segments: RefCell<Option<segments::Segments<'c>>>,
    /// The buffer table of the entry function's own scope ([`memory`]).
    pub(crate) table: Cell<Option<memory::Table<'c>>>,
    pub(crate) table_used: Cell<u64>,
    /// The buffers whose pointers live in the table.
    pub(crate) tabled: RefCell<rustc_hash::FxHashSet<PointerValue<'c>>>,
    /// The stack word each kernel result's pointer was returned in
    /// ([`Codegen::reloaded`]).
    pub(crate) homes: RefCell<HashMap<PointerValue<'c>, Home<'c>>>,
    /// The primitive and place of the equation being lowered, which run-time
    /// errors of its allocations name.
    pub(crate) current: Cell<Option<(&'f str, TextRange)>>,
}

/// Functions, kernels and constants of the module, declared once and found
/// again by key.
pub(crate) struct ModuleItems<'c> {
    /// The let functions declared, by jaxpr and the symbols passed
    /// ([`calls`]), and those whose bodies are still to be built.
    pub(crate) let_functions: RefCell<HashMap<(JaxprId, Vec<Symbol>), FunctionValue<'c>>>,
    pub(crate) pending: RefCell<Vec<calls::Pending<'c>>>,
    /// libmvec functions declared for the vectorizer ([`vmath`]).
    pub(crate) vector_functions: RefCell<Vec<FunctionValue<'c>>>,
    pub(crate) strings: RefCell<HashMap<String, PointerValue<'c>>>,
    /// The kernels built, by key ([`kernels`]): the function and its number
    /// of results, or `None` for a computation that is not a kernel.
    pub(crate) kernels: RefCell<HashMap<String, Option<(FunctionValue<'c>, usize)>>>,
    /// Literals' read-only globals, by dtype and text: one per distinct
    /// literal, so that kernels reading equal literals are equal.
    pub(crate) literals: RefCell<HashMap<(String, String), PointerValue<'c>>>,
}

/// Elementwise equations deferred into their user ([`crate::fusion`]).
pub(crate) struct Fusion<'c, 'f> {
    /// Equations deferred into their user (see [`fusion`]): the result
    /// variable, the computation, its extents and dtype.
    pub(crate) deferred: RefCell<HashMap<usize, (fusion::Node<'f, 'c>, Vec<IntValue<'c>>, DType)>>,
    pub(crate) deferred_ids: Cell<usize>,
    /// While a fused loop's kernel is built: the kernel's parameter for
    /// each pointer of the caller its leaves read.
    pub(crate) leaf_params: RefCell<HashMap<PointerValue<'c>, PointerValue<'c>>>,
}

/// The quantum kernel being lowered ([`crate::quantum`], [`crate::gradient`]).
pub(crate) struct QuantumState {
    /// Whether the quantum kernel being lowered runs one shot at a time
    /// (Catalyst's `dynamic-one-shot` pass), where measurements of
    /// mid-circuit measurement results (`mcmobs`) have their meaning.
    pub(crate) one_shot: Cell<bool>,
    /// The circuit being differentiated ([`crate::gradient`]).
    pub(crate) tape: crate::gradient::TapeCell,
}

impl<'c, 'f> Codegen<'c, 'f> {
    pub(crate) fn new(
        cx: &'c Context,
        file: &'f ast::SourceFile,
        a: &'f Analysis,
        opts: &crate::Options,
    ) -> Self {
        let name = opts.name.as_str();
        Codegen {
            context: cx,
            module: cx.create_module(name),
            builder: cx.create_builder(),
            analysis: a,
            syntax: Syntax::new(file, a),
            lib: Library {
                name: name.to_string(),
                threefry: opts.threefry,
                vector_isas: vmath::isas(opts.cpu),
                catalyst: None,
                quantum_seed: None,
                mpi: None,
                shards: crate::mpi::ShardsEntry::None,
            },
            fun: FunctionState {
                func: Cell::new(None),
                err_buf: Cell::new(None),
                scopes: RefCell::default(),
                unwinds: RefCell::default(),
                loop_states: RefCell::default(),
                io: Cell::new(None),
                segments: RefCell::default(),
                table: Cell::new(None),
                table_used: Cell::new(0),
                tabled: RefCell::default(),
                homes: RefCell::default(),
                current: Cell::new(None),
            },
            items: ModuleItems {
                let_functions: RefCell::default(),
                pending: RefCell::default(),
                vector_functions: RefCell::default(),
                strings: RefCell::default(),
                kernels: RefCell::default(),
                literals: RefCell::default(),
            },
            fusion: Fusion {
                deferred: RefCell::default(),
                deferred_ids: Cell::new(0),
                leaf_params: RefCell::default(),
            },
            quantum: QuantumState {
                one_shot: Cell::new(false),
                tape: RefCell::default(),
            },
        }
    }

    // ---- LLVM basics ---------------------------------------------------------

    /// The entry's buffer a failure's message is written to (set when the
    /// entry function is begun, before any equation is lowered).
    pub(crate) fn error_buffer(&self) -> PointerValue<'c> {
        self.fun
            .err_buf
            .get()
            .expect("error buffer")
            .as_pointer_value()
    }

    pub fn i64(&self, x: i64) -> IntValue<'c> {
        self.context.i64_type().const_int(x as u64, true)
    }
    pub fn i32(&self, x: i64) -> IntValue<'c> {
        self.context.i32_type().const_int(x as u64, true)
    }
    pub fn ptr_ty(&self) -> inkwell::types::PointerType<'c> {
        self.context.ptr_type(AddressSpace::default())
    }

    /// The storage type of a dtype (bool is one byte, 0 or 1).
    pub fn elem(&self, dt: &DType, at: TextRange) -> LowerResult<BasicTypeEnum<'c>> {
        Ok(match dt {
            DType::Bool => self.context.i8_type().into(),
            DType::Int(8) | DType::UInt(8) => self.context.i8_type().into(),
            DType::Int(16) | DType::UInt(16) => self.context.i16_type().into(),
            DType::Int(32) | DType::UInt(32) => self.context.i32_type().into(),
            DType::Int(64) | DType::UInt(64) => self.context.i64_type().into(),
            DType::Float(FloatKind::F16) => self.context.f16_type().into(),
            DType::Float(FloatKind::BF16) => self.context.bf16_type().into(),
            DType::Float(FloatKind::F32) => self.context.f32_type().into(),
            DType::Float(FloatKind::F64) => self.context.f64_type().into(),
            DType::Complex(64) => self.complex_type(self.context.f32_type()),
            DType::Complex(128) => self.complex_type(self.context.f64_type()),
            // A register, qubit or observable: the quantum runtime's handle.
            d if crate::quantum::is_handle(d) => self.context.i64_type().into(),
            _ => return err(at, format!("dtype {dt} has no native lowering")),
        })
    }

    pub fn size_of(dt: &DType) -> i64 {
        match dt {
            DType::Bool => 1,
            d => d.bits().map_or(8, |b| (b as i64 / 8).max(1)),
        }
    }

    pub(crate) fn func(&self) -> FunctionValue<'c> {
        self.fun.func.get().expect("inside the entry function")
    }

    /// Declares (once) an external C function.
    pub fn extern_fn(
        &self,
        name: &str,
        ret: Option<BasicTypeEnum<'c>>,
        params: &[BasicMetadataTypeEnum<'c>],
        variadic: bool,
    ) -> FunctionValue<'c> {
        if let Some(f) = self.module.get_function(name) {
            return f;
        }
        let t = match ret {
            Some(r) => r.fn_type(params, variadic),
            None => self.context.void_type().fn_type(params, variadic),
        };
        self.module.add_function(name, t, Some(Linkage::External))
    }

    pub fn call(
        &self,
        f: FunctionValue<'c>,
        args: &[BasicMetadataValueEnum<'c>],
    ) -> Option<BasicValueEnum<'c>> {
        self.builder
            .build_call(f, args, "")
            .expect("call")
            .try_as_basic_value()
            .basic()
    }

    pub fn block(&self, name: &str) -> BasicBlock<'c> {
        self.context.append_basic_block(self.func(), name)
    }

    pub fn here(&self) -> BasicBlock<'c> {
        self.builder.get_insert_block().expect("positioned")
    }

    /// Builds (once) a private function `name` with `body`; the insertion
    /// point of the current function is kept. Its body must not fail at run
    /// time ([`Codegen::fail_if`] returns from the entry function only).
    pub fn internal_fn(
        &self,
        name: &str,
        ty: inkwell::types::FunctionType<'c>,
        body: &mut dyn FnMut(FunctionValue<'c>) -> LowerResult<()>,
    ) -> LowerResult<FunctionValue<'c>> {
        if let Some(f) = self.module.get_function(name) {
            return Ok(f);
        }
        let f = self.module.add_function(name, ty, Some(Linkage::Private));
        let here = self.builder.get_insert_block();
        let outer = self.fun.func.replace(Some(f));
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let r = body(f);
        self.fun.func.set(outer);
        if let Some(bb) = here {
            self.builder.position_at_end(bb);
        }
        r.map(|()| f)
    }

    /// A constant C string.
    pub(crate) fn cstr(&self, s: &str) -> PointerValue<'c> {
        if let Some(&p) = self.items.strings.borrow().get(s) {
            return p;
        }
        let g = self
            .builder
            .build_global_string_ptr(s, "msg")
            .expect("string")
            .as_pointer_value();
        self.items.strings.borrow_mut().insert(s.to_string(), g);
        g
    }

    /// A stack slot in the entry block (promoted to registers by LLVM).
    pub fn slot(&self, t: BasicTypeEnum<'c>) -> PointerValue<'c> {
        let entry = self.func().get_first_basic_block().expect("entry");
        let tmp = self.context.create_builder();
        match entry.get_first_instruction() {
            Some(i) => tmp.position_before(&i),
            None => tmp.position_at_end(entry),
        }
        tmp.build_alloca(t, "slot").expect("alloca")
    }

    /// If `bad` holds: the error message (printf format and arguments) is
    /// stored for `NAME_error` and the call returns 1.
    pub fn fail_if(&self, bad: IntValue<'c>, fmt: &str, args: &[BasicMetadataValueEnum<'c>]) {
        if never(bad) {
            return;
        }
        let ok = self.branch_to_fail(bad);
        self.report(fmt, args);
        self.unwind_to(ok);
    }

    /// Stores the error message (printf format and arguments) for
    /// `NAME_error`.
    pub(crate) fn report(&self, fmt: &str, args: &[BasicMetadataValueEnum<'c>]) {
        let snprintf = self.extern_fn(
            "snprintf",
            Some(self.context.i32_type().into()),
            &[
                self.ptr_ty().into(),
                self.context.i64_type().into(),
                self.ptr_ty().into(),
            ],
            true,
        );
        let buf = self.error_buffer();
        let mut all: Vec<BasicMetadataValueEnum> = vec![
            buf.into(),
            self.i64(ERR_LEN as i64).into(),
            self.cstr(fmt).into(),
        ];
        all.extend_from_slice(args);
        self.call(snprintf, &all);
    }

    /// If `bad` holds the call returns 1 with the message already stored
    /// (by a let function that failed).
    pub fn fail_if_reported(&self, bad: IntValue<'c>) {
        if never(bad) {
            return;
        }
        // Straight to the unwinding: there is nothing to store.
        let ok = self.block("ok");
        self.builder
            .build_conditional_branch(bad, self.unwind_block(), ok)
            .expect("br");
        self.builder.position_at_end(ok);
    }

    /// Branches to a new failure block if `bad` holds, positioned there;
    /// the block where the code goes on otherwise.
    pub(crate) fn branch_to_fail(&self, bad: IntValue<'c>) -> BasicBlock<'c> {
        let fail = self.block("fail");
        let ok = self.block("ok");
        self.builder
            .build_conditional_branch(bad, fail, ok)
            .expect("br");
        self.builder.position_at_end(fail);
        ok
    }

    /// Ends a failure block by unwinding; continues in `ok`.
    pub(crate) fn unwind_to(&self, ok: BasicBlock<'c>) {
        let unwind = self.unwind_block();
        self.builder.build_unconditional_branch(unwind).expect("br");
        self.builder.position_at_end(ok);
    }

    pub fn icmp(&self, p: IntPredicate, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_int_compare(p, x, y, "").expect("icmp")
    }
    pub fn add(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_int_add(x, y, "").expect("add")
    }
    pub fn sub(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_int_sub(x, y, "").expect("sub")
    }
    pub fn mul(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_int_mul(x, y, "").expect("mul")
    }
    pub fn or(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_or(x, y, "").expect("or")
    }
    pub fn and(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder.build_and(x, y, "").expect("and")
    }
    pub fn select_int(&self, c: IntValue<'c>, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.builder
            .build_select(c, x, y, "")
            .expect("select")
            .into_int_value()
    }
    /// `min(max(x, lo), hi)` on signed i64.
    pub fn clamp_i64(&self, x: IntValue<'c>, lo: IntValue<'c>, hi: IntValue<'c>) -> IntValue<'c> {
        let x = self.select_int(self.icmp(IntPredicate::SLT, x, lo), lo, x);
        self.select_int(self.icmp(IntPredicate::SGT, x, hi), hi, x)
    }

    pub fn min_i64(&self, x: IntValue<'c>, y: IntValue<'c>) -> IntValue<'c> {
        self.select_int(self.icmp(IntPredicate::SLT, x, y), x, y)
    }
    /// `ceil(n / k)` for `n >= 0`, `k >= 1`.
    pub fn ceil_div_by(&self, n: IntValue<'c>, k: IntValue<'c>) -> IntValue<'c> {
        let n1 = self.sub(self.add(n, k), self.i64(1));
        self.builder.build_int_signed_div(n1, k, "").expect("div")
    }
    /// `ceil(n / k)` for `n >= 0`.
    pub fn ceil_div(&self, n: IntValue<'c>, k: i64) -> IntValue<'c> {
        self.ceil_div_by(n, self.i64(k))
    }

    // ---- arrays and memory ---------------------------------------------------

    pub fn numel(&self, dims: &[IntValue<'c>]) -> IntValue<'c> {
        dims.iter().fold(self.i64(1), |acc, &d| self.mul(acc, d))
    }

    /// Row-major offset of an index.
    pub fn offset(&self, idx: &[IntValue<'c>], dims: &[IntValue<'c>]) -> IntValue<'c> {
        let mut off = self.i64(0);
        for (k, (&i, &d)) in idx.iter().zip(dims).enumerate() {
            off = if k == 0 {
                i
            } else {
                self.add(self.mul(off, d), i)
            };
        }
        off
    }

    pub fn gep(
        &self,
        dt: &DType,
        p: PointerValue<'c>,
        off: IntValue<'c>,
    ) -> LowerResult<PointerValue<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        // SAFETY (of the generated code): offsets are within the extents
        // the inputs were validated against.
        Ok(unsafe { self.builder.build_gep(t, p, &[off], "").expect("gep") })
    }

    pub fn load(
        &self,
        dt: &DType,
        p: PointerValue<'c>,
        off: IntValue<'c>,
    ) -> LowerResult<BasicValueEnum<'c>> {
        let t = self.elem(dt, TextRange::new(0, 0))?;
        let q = self.gep(dt, p, off)?;
        Ok(self.builder.build_load(t, q, "").expect("load"))
    }

    pub fn store(
        &self,
        dt: &DType,
        p: PointerValue<'c>,
        off: IntValue<'c>,
        v: BasicValueEnum<'c>,
    ) -> LowerResult<()> {
        let q = self.gep(dt, p, off)?;
        self.builder.build_store(q, v).expect("store");
        Ok(())
    }

    /// A scalar array's value as i64 (dimension variables, indices).
    pub fn scalar_i64(&self, x: &Op<'c>, at: TextRange) -> LowerResult<IntValue<'c>> {
        let Some(dt) = &x.ty.dtype else {
            return err(at, "a value without dtype");
        };
        let v = self.load(dt, x.v.p, self.i64(0))?;
        self.to_i64(v, dt, at)
    }

    pub fn to_i64(
        &self,
        v: BasicValueEnum<'c>,
        dt: &DType,
        at: TextRange,
    ) -> LowerResult<IntValue<'c>> {
        let i64t = self.context.i64_type();
        match dt {
            DType::Int(_) => Ok(self
                .builder
                .build_int_s_extend_or_bit_cast(v.into_int_value(), i64t, "")
                .expect("sext")),
            DType::UInt(_) | DType::Bool => Ok(self
                .builder
                .build_int_z_extend_or_bit_cast(v.into_int_value(), i64t, "")
                .expect("zext")),
            _ => err(at, format!("a {dt} value used as an integer")),
        }
    }

    // ---- loops -----------------------------------------------------------------
}

/// Whether a condition is the constant false (a check of static extents
/// that holds): no failure branch is emitted for it, which keeps the IR
/// LLVM must read small.
pub(crate) fn never(c: IntValue<'_>) -> bool {
    c.get_zero_extended_constant() == Some(0)
}

pub(crate) fn dtype(t: &AType) -> LowerResult<DType> {
    match &t.dtype {
        // A PRNG key array is its key data ([`random::physical`]).
        Some(d) if jaxpr_lower::random::key_words(d).is_some() => Ok(DType::UInt(32)),
        Some(d) => Ok(d.clone()),
        None => err(
            TextRange::new(0, 0),
            "a value without dtype cannot be built",
        ),
    }
}
