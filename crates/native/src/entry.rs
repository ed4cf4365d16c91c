//! The library's entry point: the exported functions, the input checks
//! every call makes before reading anything ([`Codegen::validate`]), and
//! the split of the entry's body into parts ([`super::segments`]).

use super::calls;
use super::{Arr, Codegen, ERR_LEN, Env, Home, MAX_BYTES, MAX_RANK, Op, dtype};
use crate::abi::exported_names;
use crate::dtype_code;
use crate::random;
use inkwell::IntPredicate;
use inkwell::module::Linkage;
use inkwell::types::BasicTypeEnum;
use inkwell::values::{BasicMetadataValueEnum, FunctionValue, IntValue, PointerValue};
use jaxpr_lower::{LowerResult, Operand, err};
use jaxpr_syntax::TextRange;
use jaxpr_types::{Dim, DimNames, VarId};

impl<'c, 'f> Codegen<'c, 'f> {
    pub(crate) fn library(&self) -> LowerResult<()> {
        let Some(main) = self.analysis.main() else {
            return err(TextRange::new(0, 0), "the file has no main jaxpr to build");
        };
        let info = self.analysis.jaxpr(main);
        let inputs: Vec<VarId> = info.constvars.iter().chain(&info.invars).copied().collect();
        let explicit: Vec<bool> = (0..info.outs.len())
            .map(|k| info.signature.out_type.get(k).is_none_or(|e| e.explicit))
            .collect();
        let n_out = explicit.iter().filter(|e| **e).count();
        let i64t = self.context.i64_type();
        let ptr = self.ptr_ty();
        let buf_ty = self.context.i8_type().array_type(ERR_LEN as u32);
        let buf = self
            .module
            .add_global(buf_ty, None, &format!("{}_error_buf", self.lib.name));
        buf.set_initializer(&buf_ty.const_zero());
        buf.set_thread_local(true);
        buf.set_linkage(Linkage::Internal);
        self.fun.err_buf.set(Some(buf));
        // NAME_error, NAME_free, NAME_num_inputs, NAME_num_outputs.
        let simple = |name: &str, t: inkwell::types::FunctionType<'c>| {
            let f = self.module.add_function(name, t, None);
            self.builder
                .position_at_end(self.context.append_basic_block(f, "entry"));
            f
        };
        simple(&format!("{}_error", self.lib.name), ptr.fn_type(&[], false));
        self.builder
            .build_return(Some(&buf.as_pointer_value()))
            .expect("ret");
        let f = simple(
            &format!("{}_free", self.lib.name),
            self.context.void_type().fn_type(&[ptr.into()], false),
        );
        self.fun.func.set(Some(f));
        let arg = f.get_first_param().expect("param");
        self.free_output(arg.into_pointer_value())?;
        self.builder.build_return(None).expect("ret");
        self.fun.func.set(None);
        if !matches!(self.lib.shards, crate::mpi::ShardsEntry::RankProgram) {
            simple(
                &format!("{}_num_inputs", self.lib.name),
                i64t.fn_type(&[], false),
            );
            self.builder
                .build_return(Some(&self.i64(inputs.len() as i64)))
                .expect("ret");
            simple(
                &format!("{}_num_outputs", self.lib.name),
                i64t.fn_type(&[], false),
            );
            self.builder
                .build_return(Some(&self.i64(n_out as i64)))
                .expect("ret");
            self.mpi_exports();
        }

        let t = self
            .context
            .i32_type()
            .fn_type(&[ptr.into(), i64t.into(), ptr.into(), i64t.into()], false);
        let f = self.module.add_function(&self.entry_symbol(), t, None);
        if self.lib.catalyst.is_some() {
            // Called by the adapter's exported entry point, in the library only.
            f.as_global_value()
                .set_visibility(inkwell::GlobalVisibility::Hidden);
        }
        self.fun.func.set(Some(f));
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let p = |k: u32| f.get_nth_param(k).expect("param");
        let (in_p, n_in, out_p, n_out_v) = (
            p(0).into_pointer_value(),
            p(1).into_int_value(),
            p(2).into_pointer_value(),
            p(3).into_int_value(),
        );
        self.cache_destructor()?;
        self.scope_begin();
        self.table_begin()?;
        self.fun.io.set(Some((in_p, out_p)));
        let mut env = self.validate(&inputs, in_p, n_in)?;
        self.mpi_begin();
        self.check_arrays_arg("outputs", out_p, n_out_v, n_out as i64);
        self.segments_begin(main, (in_p, out_p));
        let outs = self.body(&mut env, main, false)?;
        // The rest is in the last function the equations went to.
        let out_p = self.fun.io.get().map_or(out_p, |io| io.1);
        let outs: Vec<Op> = outs
            .into_iter()
            .zip(&explicit)
            .filter(|(_, e)| **e)
            .map(|(o, _)| o)
            .collect();
        for o in &outs {
            if o.ty.rank() > MAX_RANK {
                return err(
                    info.range,
                    format!(
                        "an output of rank {} exceeds the C ABI's {MAX_RANK}",
                        o.ty.rank()
                    ),
                );
            }
        }
        let fresh = self.outputs(&outs)?;
        self.scope_end(&[])?;
        for (k, (o, x)) in outs.iter().zip(&fresh).enumerate() {
            let dt = dtype(&o.ty)?;
            let Some(code) = dtype_code(&dt) else {
                return err(
                    info.range,
                    format!("outputs of dtype {dt} are not in the C ABI"),
                );
            };
            let at = |field: i64| self.field(out_p, k as i64, field);
            self.builder.build_store(at(0), x.p).expect("store");
            self.builder
                .build_store(at(8), self.i32(code as i64))
                .expect("store");
            self.builder
                .build_store(at(12), self.i32(x.dims.len() as i64))
                .expect("store");
            for j in 0..MAX_RANK {
                let d = x.dims.get(j).copied().unwrap_or(self.i64(0));
                self.builder
                    .build_store(at(16 + 8 * j as i64), d)
                    .expect("store");
            }
        }
        self.builder.build_return(Some(&self.i32(0))).expect("ret");
        self.segments_end();
        if self.lib.catalyst.is_some() {
            let body = self
                .module
                .get_function(&self.entry_symbol())
                .expect("the entry function");
            self.quantum_entry(body, self.lib.quantum_seed);
        }
        self.table_end();
        self.build_let_functions()?;
        self.keep_vector_functions();
        // After the entry, which `NAME_shards` may call.
        self.shards_exports(&inputs)
    }

    /// The entry point and the functions exported beside it.
    pub(crate) fn entry_point(&self) -> Vec<FunctionValue<'c>> {
        let mut names = exported_names(&self.lib.name).to_vec();
        if self.lib.catalyst.is_some() {
            names.push(self.entry_symbol());
        }
        names
            .iter()
            .filter_map(|n| self.module.get_function(n))
            .collect()
    }

    /// The symbol of the generated entry function: the exported name, or
    /// for a quantum program the function the adapter's exported entry
    /// point calls inside the runtime's lock ([`crate::quantum`]).
    pub(crate) fn entry_symbol(&self) -> String {
        match self.lib.catalyst {
            Some(_) => format!("{}_circuit", self.lib.name),
            None => self.lib.name.clone(),
        }
    }

    /// The entry function and the parts it is split into ([`segments`]).
    pub(crate) fn entry_functions(&self) -> Vec<FunctionValue<'c>> {
        let mut fs: Vec<_> = self
            .module
            .get_function(&self.entry_symbol())
            .into_iter()
            .collect();
        fs.extend(self.segment_functions());
        fs
    }

    /// The functions that are built once and called (kernels, let
    /// functions), and the entry point: each is defined in one part of
    /// the module ([`parts`]).
    pub(crate) fn built_once(&self) -> Vec<FunctionValue<'c>> {
        let mut fs = self.entry_point();
        fs.extend(
            self.items
                .kernels
                .borrow()
                .values()
                .flatten()
                .map(|&(f, _)| f),
        );
        fs.extend(self.items.let_functions.borrow().values().copied());
        fs.extend(self.segment_functions());
        fs
    }

    /// A read-only global array of i64 constants.
    pub(crate) fn constant_i64s(&self, xs: &[i64]) -> PointerValue<'c> {
        let i64t = self.context.i64_type();
        let values: Vec<IntValue<'c>> = xs.iter().map(|&x| self.i64(x)).collect();
        let g = self
            .module
            .add_global(i64t.array_type(xs.len() as u32), None, "extents");
        g.set_initializer(&i64t.const_array(&values));
        g.set_constant(true);
        g.set_linkage(Linkage::Private);
        g.as_pointer_value()
    }

    /// `i32 jx_check_input(jx_array *x, char *what, i32 code, char *dtype,
    /// i32 rank, i64 limit, i64 *expected)`: checks an input's dtype code,
    /// rank, extents (each at most `limit`, the product of the nonzero
    /// ones too, and `expected[j]` unless it is -1) and that its data is
    /// not NULL when it has elements; 0, or 1 with the message stored.
    pub(crate) fn check_input_fn(&self) -> LowerResult<FunctionValue<'c>> {
        if let Some(f) = self.module.get_function("jx_check_input") {
            return Ok(f);
        }
        let (ptr, i32t, i64t) = (
            self.ptr_ty(),
            self.context.i32_type(),
            self.context.i64_type(),
        );
        let ty = i32t.fn_type(
            &[
                ptr.into(),
                ptr.into(),
                i32t.into(),
                ptr.into(),
                i32t.into(),
                i64t.into(),
                ptr.into(),
            ],
            false,
        );
        let f = self
            .module
            .add_function("jx_check_input", ty, Some(Linkage::Private));
        let here = self.builder.get_insert_block();
        let outer = self.enter_frame(calls::Frame {
            func: Some(f),
            ..Default::default()
        });
        self.builder
            .position_at_end(self.context.append_basic_block(f, "entry"));
        let param = |k: u32| f.get_nth_param(k).expect("param");
        let x = param(0).into_pointer_value();
        let what: BasicMetadataValueEnum = param(1).into_pointer_value().into();
        let code = param(2).into_int_value();
        let dt: BasicMetadataValueEnum = param(3).into_pointer_value().into();
        let rank = param(4).into_int_value();
        let limit = param(5).into_int_value();
        let expected = param(6).into_pointer_value();
        let load = |t: BasicTypeEnum<'c>, at: PointerValue<'c>| {
            self.builder.build_load(t, at, "").expect("load")
        };
        let byte = |off: IntValue<'c>| unsafe {
            self.builder
                .build_gep(self.context.i8_type(), x, &[off], "")
                .expect("gep")
        };
        let got = load(i32t.into(), byte(self.i64(8))).into_int_value();
        self.fail_if(
            self.icmp(IntPredicate::NE, got, code),
            "%s: dtype code %d, expected %d (%s)",
            &[what, got.into(), code.into(), dt],
        );
        let got = load(i32t.into(), byte(self.i64(12))).into_int_value();
        self.fail_if(
            self.icmp(IntPredicate::NE, got, rank),
            "%s: rank %d, expected %d",
            &[what, got.into(), rank.into()],
        );
        let rank64 = self
            .builder
            .build_int_s_extend(rank, i64t, "")
            .expect("sext");
        // The product of the nonzero extents is bounded too, as in
        // `checked_count`: no product of some of them overflows.
        let built = self.for_carry(
            rank64,
            &[self.i64(1).into(), self.i64(1).into()],
            &mut |j, acc| {
                let (nonzero, total) = (acc[0].into_int_value(), acc[1].into_int_value());
                let d = load(
                    i64t.into(),
                    byte(self.add(self.i64(16), self.mul(j, self.i64(8)))),
                )
                .into_int_value();
                self.fail_if(
                    self.or(
                        self.icmp(IntPredicate::SLT, d, self.i64(0)),
                        self.icmp(IntPredicate::SGT, d, limit),
                    ),
                    "%s: extent %lld of dimension %lld is out of range",
                    &[what, d.into(), j.into()],
                );
                // nonzero * d <= limit, checked before multiplying.
                let nz =
                    self.select_int(self.icmp(IntPredicate::EQ, d, self.i64(0)), self.i64(1), d);
                let room = self
                    .builder
                    .build_int_signed_div(limit, nz, "")
                    .expect("div");
                self.fail_if(
                    self.icmp(IntPredicate::SGT, nonzero, room),
                    "%s: too many elements",
                    &[what],
                );
                let want = load(i64t.into(), unsafe {
                    self.builder
                        .build_gep(i64t, expected, &[j], "")
                        .expect("gep")
                })
                .into_int_value();
                self.fail_if(
                    self.and(
                        self.icmp(IntPredicate::SGE, want, self.i64(0)),
                        self.icmp(IntPredicate::NE, d, want),
                    ),
                    "%s: dimension %lld is %lld, expected %lld",
                    &[what, j.into(), d.into(), want.into()],
                );
                Ok(vec![
                    self.mul(nonzero, nz).into(),
                    self.mul(total, d).into(),
                ])
            },
        );
        let built = built.map(|acc| {
            let data = load(ptr.into(), x).into_pointer_value();
            let null = self.builder.build_is_null(data, "").expect("null");
            let nonempty = self.icmp(IntPredicate::SGT, acc[1].into_int_value(), self.i64(0));
            self.fail_if(self.and(null, nonempty), "%s: data is NULL", &[what]);
            self.builder.build_return(Some(&self.i32(0))).expect("ret");
        });
        self.enter_frame(outer);
        if let Some(bb) = here {
            self.builder.position_at_end(bb);
        }
        built.map(|()| f)
    }

    /// The address of byte `field` of `arrays[k]` (a `jx_array`, 80 bytes).
    pub(crate) fn field(&self, arrays: PointerValue<'c>, k: i64, field: i64) -> PointerValue<'c> {
        let i8t = self.context.i8_type();
        let off = self.i64(k * 80 + field);
        unsafe {
            self.builder
                .build_gep(i8t, arrays, &[off], "")
                .expect("gep")
        }
    }

    /// Checks an array argument of the entry point (`inputs` or
    /// `outputs`): the caller's count `got` must be `want`, and the
    /// pointer must not be NULL when there are arrays behind it.
    pub(crate) fn check_arrays_arg(
        &self,
        name: &str,
        arrays: PointerValue<'c>,
        got: IntValue<'c>,
        want: i64,
    ) {
        let bad = self.icmp(IntPredicate::NE, got, self.i64(want));
        self.fail_if(
            bad,
            &format!("expected {want} {name}, got %lld"),
            &[got.into()],
        );
        if want > 0 {
            let null = self.builder.build_is_null(arrays, "").expect("null");
            self.fail_if(null, &format!("{name} is NULL"), &[]);
        }
    }

    /// Checks the inputs against the main jaxpr's signature; binds them.
    pub(crate) fn validate(
        &self,
        inputs: &[VarId],
        in_p: PointerValue<'c>,
        n_in: IntValue<'c>,
    ) -> LowerResult<Env<'c>> {
        self.check_arrays_arg("inputs", in_p, n_in, inputs.len() as i64);
        let i64t = self.context.i64_type();
        let mut env = Env::default();
        let mut shapes: Vec<Vec<IntValue>> = Vec::new();
        // Dtype, rank, extents >= 0, sizes in bounds, data not NULL.
        for (k, &v) in inputs.iter().enumerate() {
            let var = self.analysis.var(v);
            let what = format!("input {k} (`{}`: {})", var.name, self.analysis.ty(&var.ty));
            let ty = random::physical(&var.ty);
            let dt = dtype(&ty).or_else(|_| err(var.range, "an input without dtype"))?;
            let Some(code) = dtype_code(&dt) else {
                return err(
                    var.range,
                    format!("inputs of dtype {dt} are not in the C ABI"),
                );
            };
            let rank = ty.rank();
            if rank > MAX_RANK {
                return err(
                    var.range,
                    format!("an input of rank {rank} exceeds the C ABI's {MAX_RANK}"),
                );
            }
            let k = k as i64;
            // The checks of one input are one function for every input
            // (its IR would otherwise grow with the number of inputs).
            let mut expected = Vec::with_capacity(rank);
            for d in &ty.shape {
                expected.push(match d {
                    Dim::Const(c) => jaxpr_lower::walk::static_extent(*c, var.range)?,
                    _ => -1,
                });
            }
            let expected_g = self.constant_i64s(&expected);
            let rc = self
                .call(
                    self.check_input_fn()?,
                    &[
                        self.field(in_p, k, 0).into(),
                        self.cstr(&what).into(),
                        self.i32(code as i64).into(),
                        self.cstr(&dt.to_string()).into(),
                        self.i32(rank as i64).into(),
                        self.i64(MAX_BYTES / Codegen::size_of(&dt)).into(),
                        expected_g.into(),
                    ],
                )
                .expect("status")
                .into_int_value();
            self.fail_if_reported(self.icmp(IntPredicate::NE, rc, self.i32(0)));
            let mut dims = Vec::new();
            for (j, &want) in expected.iter().enumerate() {
                // Checked: a static extent is the constant from here on
                // (static extents fold, and kernels take constants).
                dims.push(if want >= 0 {
                    self.i64(want)
                } else {
                    self.builder
                        .build_load(i64t, self.field(in_p, k, 16 + 8 * j as i64), "")
                        .expect("load")
                        .into_int_value()
                });
            }
            let data = self
                .builder
                .build_load(self.ptr_ty(), self.field(in_p, k, 0), "")
                .expect("load")
                .into_pointer_value();
            // Read again from the caller's array at each use ([`Codegen::reloaded`]).
            self.fun.homes.borrow_mut().insert(data, Home::Input(k));
            env.vals.insert(
                v,
                Operand {
                    v: Arr::new(data, dims.clone()),
                    ty: var.ty.clone(),
                },
            );
            shapes.push(dims);
        }
        // Dimension variables: each use equals the argument's value.
        for (k, &v) in inputs.iter().enumerate() {
            let var = self.analysis.var(v);
            for (j, d) in var.ty.shape.iter().enumerate() {
                let Dim::Var(w) = d else { continue };
                if !env.vals.contains_key(w) {
                    return err(var.range, "a dimension variable that is not an input");
                }
                let want = self.dim(&env, d, var.range)?;
                let got = shapes[k][j];
                self.fail_if(
                    self.icmp(IntPredicate::NE, got, want),
                    &format!(
                        "input {k} (`{}`: {}): dimension {j} is %lld, but `{}` is %lld",
                        var.name,
                        self.analysis.ty(&var.ty),
                        self.analysis.var(*w).name
                    ),
                    &[got.into(), want.into()],
                );
            }
        }
        // Symbolic dimensions: solved from the shapes, then every extent
        // must agree and every symbol be at least 1.
        loop {
            let mut learnt = false;
            for (k, &v) in inputs.iter().enumerate() {
                let var = self.analysis.var(v);
                for (j, d) in var.ty.shape.iter().enumerate() {
                    let Dim::Sym(p) = d else { continue };
                    let Some((s, coef, rest)) = jaxpr_lower::solvable(p, &env.syms) else {
                        continue;
                    };
                    let (rest, overflow) = self.poly(&env, &rest, var.range)?;
                    self.fail_if(
                        overflow,
                        &format!(
                            "input {k} (`{}`): solving `{p}` for `{s}` overflows 64 bits",
                            var.name
                        ),
                        &[],
                    );
                    let diff = self.sub(shapes[k][j], rest);
                    let val = self
                        .builder
                        .build_int_signed_div(diff, self.i64(coef), "")
                        .expect("div");
                    self.fail_if(
                        self.icmp(IntPredicate::SLT, val, self.i64(1)),
                        &format!(
                            "input {k} (`{}`: {}): dimension {j} is %lld, but `{p}` needs `{s}` >= 1, so at least {}",
                            var.name,
                            self.analysis.ty(&var.ty),
                            p.bounds().0.unwrap_or(1)
                        ),
                        &[shapes[k][j].into()],
                    );
                    env.syms.insert(s, val);
                    learnt = true;
                }
            }
            if !learnt {
                break;
            }
        }
        for (k, &v) in inputs.iter().enumerate() {
            let var = self.analysis.var(v);
            for (j, d) in var.ty.shape.iter().enumerate() {
                let Dim::Sym(p) = d else { continue };
                let want = self.sym_extent(
                    &env,
                    p,
                    var.range,
                    &format!("input {k} (`{}`): dimension {j}, `{p}`,", var.name),
                )?;
                self.fail_if(
                    self.icmp(IntPredicate::NE, shapes[k][j], want),
                    &format!(
                        "input {k} (`{}`: {}): dimension {j} is %lld, but `{p}` is %lld here",
                        var.name,
                        self.analysis.ty(&var.ty)
                    ),
                    &[shapes[k][j].into(), want.into()],
                );
            }
        }
        Ok(env)
    }

    // ---- walking jaxprs ------------------------------------------------------------
}
