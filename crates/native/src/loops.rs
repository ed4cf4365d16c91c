//! Loops and conditionals as basic blocks: counted loops with carried
//! values and phi nodes, loop nests over run-time extents ([`Codegen::nest`]),
//! and what LLVM may do to unroll them ([`Unroll`]).

use super::{Codegen, Unroll};
use inkwell::IntPredicate;
use inkwell::basic_block::BasicBlock;
use inkwell::values::{BasicValueEnum, IntValue, PhiValue};
use jaxpr_lower::{LowerResult, internal};
use jaxpr_syntax::TextRange;

impl<'c, 'f> Codegen<'c, 'f> {
    /// `for i in 0..n { f(i) }`.
    pub fn for_range(
        &self,
        n: IntValue<'c>,
        f: &mut dyn FnMut(IntValue<'c>) -> LowerResult<()>,
    ) -> LowerResult<()> {
        self.for_range_as(n, Unroll::AsLlvmChooses, f)
    }

    /// [`Codegen::for_range`], with what LLVM may do to unroll the loop.
    pub fn for_range_as(
        &self,
        n: IntValue<'c>,
        unroll: Unroll,
        f: &mut dyn FnMut(IntValue<'c>) -> LowerResult<()>,
    ) -> LowerResult<()> {
        self.for_carry_as(n, &[], unroll, &mut |i, _| f(i).map(|()| Vec::new()))?;
        Ok(())
    }

    /// `for i in 0..n` with values carried from one iteration to the next
    /// in phi nodes (accumulators that stay in registers): `f` gets the
    /// index and the current values and returns the next ones; the result
    /// is the values after the last iteration (`init` when `n <= 0`).
    /// Enters a loop: a branch from the current block to a new block
    /// `names[0]` (the head, where the builder continues) and new blocks
    /// `names[1]` (body) and `names[2]` (exit); the block left, which is the
    /// entry edge of the head's phi nodes, and the three blocks.
    pub fn loop_enter(&self, names: [&str; 3]) -> (BasicBlock<'c>, [BasicBlock<'c>; 3]) {
        let pre = self.here();
        let blocks = names.map(|name| self.block(name));
        self.builder
            .build_unconditional_branch(blocks[0])
            .expect("br");
        self.builder.position_at_end(blocks[0]);
        (pre, blocks)
    }

    /// A phi node of `v`'s type that holds `v` on entry from `pre`.
    pub fn phi_from(&self, v: BasicValueEnum<'c>, pre: BasicBlock<'c>, name: &str) -> PhiValue<'c> {
        let p = self.builder.build_phi(v.get_type(), name).expect("phi");
        p.add_incoming(&[(&v, pre)]);
        p
    }

    pub fn for_carry(
        &self,
        n: IntValue<'c>,
        init: &[BasicValueEnum<'c>],
        f: &mut dyn FnMut(
            IntValue<'c>,
            &[BasicValueEnum<'c>],
        ) -> LowerResult<Vec<BasicValueEnum<'c>>>,
    ) -> LowerResult<Vec<BasicValueEnum<'c>>> {
        self.for_carry_as(n, init, Unroll::AsLlvmChooses, f)
    }

    /// [`Codegen::for_carry`], with what LLVM may do to unroll the loop.
    pub fn for_carry_as(
        &self,
        n: IntValue<'c>,
        init: &[BasicValueEnum<'c>],
        unroll: Unroll,
        f: &mut dyn FnMut(
            IntValue<'c>,
            &[BasicValueEnum<'c>],
        ) -> LowerResult<Vec<BasicValueEnum<'c>>>,
    ) -> LowerResult<Vec<BasicValueEnum<'c>>> {
        if n.get_sign_extended_constant().is_some_and(|n| n <= 0) {
            return Ok(init.to_vec());
        }
        let (pre, [head, body, exit]) = self.loop_enter(["head", "body", "exit"]);
        let phi = self.phi_from(self.i64(0).into(), pre, "i");
        let carried: Vec<_> = init
            .iter()
            .map(|&v| self.phi_from(v, pre, "carry"))
            .collect();
        let values: Vec<BasicValueEnum> = carried.iter().map(|p| p.as_basic_value()).collect();
        let i = phi.as_basic_value().into_int_value();
        let c = self.icmp(IntPredicate::SLT, i, n);
        self.builder
            .build_conditional_branch(c, body, exit)
            .expect("br");
        self.builder.position_at_end(body);
        let next = f(i, &values)?;
        if next.len() != carried.len() {
            return internal(
                TextRange::new(0, 0),
                "a loop body returns another number of values",
            );
        }
        let latch = self.here();
        phi.add_incoming(&[(&self.add(i, self.i64(1)), latch)]);
        for (p, v) in carried.iter().zip(&next) {
            p.add_incoming(&[(v, latch)]);
        }
        let back = self.builder.build_unconditional_branch(head).expect("br");
        if unroll == Unroll::Never {
            self.never_unroll(back);
        }
        self.builder.position_at_end(exit);
        Ok(values)
    }

    /// Marks the loop whose back edge is `back` as one LLVM must not
    /// unroll (`llvm.loop.unroll.disable`). The loop's id is a metadata
    /// node whose first operand is itself, which inkwell cannot make.
    pub(crate) fn never_unroll(&self, back: inkwell::values::InstructionValue<'c>) {
        use inkwell::values::AsValueRef;
        use llvm_sys::core::{
            LLVMGetMDKindIDInContext, LLVMMDNodeInContext2, LLVMMDStringInContext2,
            LLVMMetadataAsValue, LLVMSetMetadata,
        };
        use llvm_sys::debuginfo::{LLVMMetadataReplaceAllUsesWith, LLVMTemporaryMDNode};
        const DISABLE: &str = "llvm.loop.unroll.disable";
        const LOOP: &str = "llvm.loop";
        let cx = self.context.raw();
        // SAFETY: every reference is of this context, alive while `self`
        // is; the temporary node is replaced (and so freed) before return.
        unsafe {
            let mut disable = LLVMMDStringInContext2(cx, DISABLE.as_ptr().cast(), DISABLE.len());
            let disable = LLVMMDNodeInContext2(cx, &mut disable, 1);
            let placeholder = LLVMTemporaryMDNode(cx, std::ptr::null_mut(), 0);
            let mut ops = [placeholder, disable];
            let id = LLVMMDNodeInContext2(cx, ops.as_mut_ptr(), ops.len());
            LLVMMetadataReplaceAllUsesWith(placeholder, id);
            let kind = LLVMGetMDKindIDInContext(cx, LOOP.as_ptr().cast(), LOOP.len() as u32);
            LLVMSetMetadata(back.as_value_ref(), kind, LLVMMetadataAsValue(cx, id));
        }
    }

    /// `if c { then() } else { other() }`.
    pub fn if_else(
        &self,
        c: IntValue<'c>,
        then: &mut dyn FnMut() -> LowerResult<()>,
        other: &mut dyn FnMut() -> LowerResult<()>,
    ) -> LowerResult<()> {
        // A condition known while building (static extents) builds one
        // side: LLVM would delete the other, after reading it.
        match c.get_zero_extended_constant() {
            Some(0) => return other(),
            Some(_) => return then(),
            None => {}
        }
        let (t, e, done) = (self.block("then"), self.block("else"), self.block("endif"));
        self.builder.build_conditional_branch(c, t, e).expect("br");
        self.builder.position_at_end(t);
        then()?;
        self.builder.build_unconditional_branch(done).expect("br");
        self.builder.position_at_end(e);
        other()?;
        self.builder.build_unconditional_branch(done).expect("br");
        self.builder.position_at_end(done);
        Ok(())
    }

    /// A loop nest over `dims` (row-major order); `f` gets the index.
    pub fn nest(
        &self,
        dims: &[IntValue<'c>],
        f: &mut dyn FnMut(&[IntValue<'c>]) -> LowerResult<()>,
    ) -> LowerResult<()> {
        self.nest_as(dims, Unroll::AsLlvmChooses, f)
    }

    /// [`Codegen::nest`], with what LLVM may do to unroll its loops.
    pub fn nest_as(
        &self,
        dims: &[IntValue<'c>],
        unroll: Unroll,
        f: &mut dyn FnMut(&[IntValue<'c>]) -> LowerResult<()>,
    ) -> LowerResult<()> {
        fn go<'c>(
            g: &Codegen<'c, '_>,
            dims: &[IntValue<'c>],
            unroll: Unroll,
            idx: &mut Vec<IntValue<'c>>,
            f: &mut dyn FnMut(&[IntValue<'c>]) -> LowerResult<()>,
        ) -> LowerResult<()> {
            if idx.len() == dims.len() {
                return f(idx);
            }
            let n = dims[idx.len()];
            g.for_range_as(n, unroll, &mut |i| {
                idx.push(i);
                let r = go(g, dims, unroll, idx, f);
                idx.pop();
                r
            })
        }
        go(self, dims, unroll, &mut Vec::new(), f)
    }

    // ---- dimensions ------------------------------------------------------------
}
