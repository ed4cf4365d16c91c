//! Memory of the generated code: buffers, scopes and a block cache.
//!
//! Every buffer a call needs comes from `jx_take` and goes back with
//! `jx_give`. Blocks of at least [`CACHE_MIN_BYTES`] are kept in a small
//! cache of released blocks (lock-free: one atomic exchange per slot) and
//! handed out again for a request of up to their size, so a library called
//! again and again reuses its memory instead of having the kernel map,
//! fault in and zero fresh pages for every large array (for a convolution
//! on 64x64 images that cost more time than the arithmetic). The cache is
//! emptied when the library is unloaded (a destructor). Each block carries
//! its capacity in a header before the data. The library's outputs are
//! such blocks too, which the caller gives back with `NAME_free`.
//!
//! The outputs handed to the caller and not yet given back are recorded in
//! a registry of live outputs (an open-addressing hash set of their data
//! pointers behind a lock, grown as needed). `NAME_free` gives a block
//! back only when it takes its pointer out of the registry: a pointer
//! freed twice, or one the library never handed out, is refused with a
//! message for `NAME_error`, without reading the memory it points to.
//!
//! Scopes (the main body, a loop iteration, a branch) own the buffers
//! allocated in them and give them back at their end, except those whose
//! values leave the scope: those are handed over, not copied (a copy only
//! when the value is a view or comes from outside). A failure (`fail_if`)
//! gives back every buffer of the open scopes and the loops' states before
//! returning, so an error leaks nothing.

use super::{Arr, Codegen, LowerResult, MAX_BYTES, Op, dtype};
use inkwell::basic_block::BasicBlock;
use inkwell::module::Linkage;
use inkwell::values::{FunctionValue, GlobalValue, IntValue, PointerValue};
use inkwell::{AtomicOrdering, AtomicRMWBinOp, IntPredicate};
use jaxpr_types::DType;

/// Released blocks of at least this many bytes are kept for reuse.
const CACHE_MIN_BYTES: i64 = 64 * 1024;
/// How many released blocks the cache keeps.
const CACHE_SLOTS: u32 = 32;
/// Bytes before a block's data: its capacity (64 keeps the data aligned
/// as malloc aligns it).
const HEADER: i64 = 64;

/// The smallest capacity of the registry of live outputs (a power of two).
const REGISTRY_MIN: i64 = 64;
/// A registry slot whose pointer was taken out (0 is an empty slot; data
/// pointers are neither).
const TOMBSTONE: i64 = 1;

/// The buffer table of the entry function's own scope: a stack array of
/// the data pointers of the buffers that scope owns (NULL once given back
/// or handed over), which its end and every failure exit give back in one
/// loop. A large program's entry function calls thousands of kernels; with
/// each buffer an SSA value, each given back at the end and in a chain of
/// failure exits (one block per buffer), that function was most of the IR
/// LLVM had to read and its buffers' live ranges most of register
/// allocation. Kernels write their results into the table directly.
#[derive(Clone, Copy)]
pub(crate) struct Table<'c> {
    /// The function whose words are being built: the entry function or
    /// the part of it being built ([`super::segments`]).
    pub func: FunctionValue<'c>,
    /// The entry function, which gives the table back on failure.
    owner: FunctionValue<'c>,
    /// A stack word holding the table's address, read again at each use
    /// (volatile): as one value used by thousands of instructions, the
    /// address made LLVM's machine passes quadratic (every change to one
    /// use walked all of them).
    pub base: PointerValue<'c>,
    /// The table's length, known when the function is complete.
    len: GlobalValue<'c>,
}

impl<'c> Table<'c> {
    /// The table as a part of the entry function built in `func` sees it,
    /// its address held in `base` there ([`super::segments`]).
    pub(crate) fn in_part(self, func: FunctionValue<'c>, base: PointerValue<'c>) -> Self {
        Table { func, base, ..self }
    }
}

impl<'c> Codegen<'c, '_> {
    /// Starts the table of the function being built, whose own scope is
    /// open; before anything can fail.
    pub(crate) fn table_begin(&self) -> LowerResult<()> {
        let i64t = self.context.i64_type();
        let len = self.module.add_global(i64t, None, "jx_table_len");
        len.set_linkage(Linkage::Private);
        len.set_constant(true);
        len.set_initializer(&self.i64(1));
        let n = self
            .builder
            .build_load(i64t, len.as_pointer_value(), "")
            .expect("load")
            .into_int_value();
        // On the heap, from a function LLVM does not know allocates: its
        // instcombine walks every use of a stack array, or of a `calloc`,
        // each time it revisits it, which for a table of thousands of
        // words took longer than the rest of the build.
        let base = self
            .call(self.table_new_fn()?, &[n.into()])
            .expect("table")
            .into_pointer_value();
        // Nothing is held yet: a failure here only returns.
        let oom = self.block("oom");
        let ok = self.block("ok");
        let null = self.builder.build_is_null(base, "").expect("null");
        self.builder
            .build_conditional_branch(null, oom, ok)
            .expect("br");
        self.builder.position_at_end(oom);
        self.report(
            "out of memory (%lld bytes)",
            &[self.mul(n, self.i64(8)).into()],
        );
        self.builder.build_return(Some(&self.i32(1))).expect("ret");
        self.builder.position_at_end(ok);
        let home = self.slot(self.ptr_ty().into());
        self.builder.build_store(home, base).expect("store");
        self.fun.table.set(Some(Table {
            func: self.func(),
            owner: self.func(),
            base: home,
            len,
        }));
        Ok(())
    }

    /// `jx_table_new(n)`: `n` zeroed words from `calloc`, or NULL.
    fn table_new_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let i64t = self.context.i64_type();
        let ty = self.ptr_ty().fn_type(&[i64t.into()], false);
        let f = self.internal_fn("jx_table_new", ty, &mut |f| {
            let calloc = self.extern_fn(
                "calloc",
                Some(self.ptr_ty().into()),
                &[i64t.into(), i64t.into()],
                false,
            );
            let n = f.get_first_param().expect("param");
            let p = self
                .call(calloc, &[n.into(), self.i64(8).into()])
                .expect("calloc");
            self.builder.build_return(Some(&p)).expect("ret");
            Ok(())
        })?;
        let noinline = inkwell::attributes::Attribute::get_named_enum_kind_id("noinline");
        f.add_attribute(
            inkwell::attributes::AttributeLoc::Function,
            self.context.create_enum_attribute(noinline, 0),
        );
        Ok(f)
    }

    /// Sets the table's length once its function is complete.
    pub(crate) fn table_end(&self) {
        if let Some(t) = self.fun.table.get() {
            t.len
                .set_initializer(&self.i64(self.fun.table_used.get().max(1) as i64));
        }
    }

    /// The table, when buffers adopted now go into it: in its function's
    /// own scope (not in a loop's or a branch's).
    fn open_table(&self) -> Option<Table<'c>> {
        self.fun
            .table
            .get()
            .filter(|t| self.fun.func.get() == Some(t.func) && self.fun.scopes.borrow().len() == 1)
    }

    /// `n` new words of the table, when it is open ([`Codegen::open_table`]):
    /// the address of the first and its index.
    pub(crate) fn table_words(&self, n: usize) -> Option<(PointerValue<'c>, u64)> {
        self.open_table()?;
        let at = self.fun.table_used.get();
        self.fun.table_used.set(at + n as u64);
        Some((self.table_word(at), at))
    }

    /// The address of word `at` of the table, computed afresh (an address
    /// kept from one use to the next would be a long live range again).
    pub(crate) fn table_word(&self, at: u64) -> PointerValue<'c> {
        let t = self.fun.table.get().expect("a buffer table");
        let base = self.volatile_load(t.base);
        // SAFETY (of the generated code): the table's length is set to
        // every word handed out.
        unsafe {
            self.builder
                .build_gep(self.ptr_ty(), base, &[self.i64(at as i64)], "")
                .expect("gep")
        }
    }

    /// Records that `p` lives in word `at` of the table.
    pub(crate) fn tabled_at(&self, p: PointerValue<'c>, at: u64) {
        self.fun
            .homes
            .borrow_mut()
            .insert(p, super::Home::Table(at));
        self.fun.tabled.borrow_mut().insert(p);
    }

    /// Gives back every buffer the table holds, and the table.
    fn give_table(&self, t: Table<'c>) -> LowerResult<()> {
        let n = self
            .builder
            .build_load(self.context.i64_type(), t.len.as_pointer_value(), "")
            .expect("load")
            .into_int_value();
        let base = self.volatile_load(t.base);
        self.call(self.give_all_fn()?, &[base.into(), n.into()]);
        Ok(())
    }

    /// `jx_give_all(table, n)`: gives back the buffers of the `n` words of
    /// a table that are not NULL, then the table. A function of its own,
    /// so that the entry function has no loop of its own when it only
    /// calls kernels ([`super::parts::straight`]).
    fn give_all_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let ty = self.context.void_type().fn_type(
            &[self.ptr_ty().into(), self.context.i64_type().into()],
            false,
        );
        self.internal_fn("jx_give_all", ty, &mut |f| {
            let base = f.get_nth_param(0).expect("param").into_pointer_value();
            let n = f.get_nth_param(1).expect("param").into_int_value();
            self.for_range(n, &mut |i| {
                let at = unsafe {
                    self.builder
                        .build_gep(self.ptr_ty(), base, &[i], "")
                        .expect("gep")
                };
                let p = self
                    .builder
                    .build_load(self.ptr_ty(), at, "")
                    .expect("load")
                    .into_pointer_value();
                let null = self.builder.build_is_null(p, "").expect("null");
                self.if_else(null, &mut || Ok(()), &mut || self.give(p))
            })?;
            self.libc_free(base);
            self.builder.build_return(None).expect("ret");
            Ok(())
        })
    }

    /// Takes a buffer out of the table (given back or handed over);
    /// whether it was there.
    fn untable(&self, p: PointerValue<'c>) -> bool {
        if !self.fun.tabled.borrow_mut().remove(&p) {
            return false;
        }
        if let Some(&super::Home::Table(at)) = self.fun.homes.borrow().get(&p) {
            self.builder
                .build_store(self.table_word(at), self.ptr_ty().const_null())
                .expect("store");
        }
        true
    }

    fn cache(&self) -> GlobalValue<'c> {
        if let Some(g) = self.module.get_global("jx_cache") {
            return g;
        }
        // Addresses as integers: LLVM's atomic exchange takes integers.
        let t = self.context.i64_type().array_type(CACHE_SLOTS);
        let g = self.module.add_global(t, None, "jx_cache");
        g.set_initializer(&t.const_zero());
        g.set_linkage(Linkage::Internal);
        g
    }

    fn slot_at(&self, s: IntValue<'c>) -> PointerValue<'c> {
        let t = self.context.i64_type().array_type(CACHE_SLOTS);
        let cache = self.cache().as_pointer_value();
        unsafe {
            self.builder
                .build_gep(t, cache, &[self.i64(0), s], "")
                .expect("gep")
        }
    }

    fn libc_malloc(&self, bytes: IntValue<'c>) -> PointerValue<'c> {
        let malloc = self.extern_fn(
            "malloc",
            Some(self.ptr_ty().into()),
            &[self.context.i64_type().into()],
            false,
        );
        self.call(malloc, &[bytes.into()])
            .expect("malloc")
            .into_pointer_value()
    }

    fn libc_free(&self, p: PointerValue<'c>) {
        let free = self.extern_fn("free", None, &[self.ptr_ty().into()], false);
        self.call(free, &[p.into()]);
    }

    fn byte_offset(&self, p: PointerValue<'c>, bytes: i64) -> PointerValue<'c> {
        unsafe {
            self.builder
                .build_gep(self.context.i8_type(), p, &[self.i64(bytes)], "")
                .expect("gep")
        }
    }

    /// Empties a slot of the cache; its block or NULL.
    fn cache_grab(&self, slot: PointerValue<'c>) -> PointerValue<'c> {
        let v = self
            .builder
            .build_atomicrmw(
                AtomicRMWBinOp::Xchg,
                slot,
                self.i64(0),
                AtomicOrdering::SequentiallyConsistent,
            )
            .expect("xchg");
        self.builder
            .build_int_to_ptr(v, self.ptr_ty(), "")
            .expect("inttoptr")
    }

    /// Puts `base` into a slot of the cache if it is empty; whether it was.
    fn cache_put(&self, slot: PointerValue<'c>, base: PointerValue<'c>) -> IntValue<'c> {
        let v = self
            .builder
            .build_ptr_to_int(base, self.context.i64_type(), "")
            .expect("ptrtoint");
        let r = self
            .builder
            .build_cmpxchg(
                slot,
                self.i64(0),
                v,
                AtomicOrdering::SequentiallyConsistent,
                AtomicOrdering::SequentiallyConsistent,
            )
            .expect("cmpxchg");
        self.builder
            .build_extract_value(r, 1, "")
            .expect("extract")
            .into_int_value()
    }

    /// The capacity a block's header records (at its base).
    fn capacity(&self, base: PointerValue<'c>) -> IntValue<'c> {
        self.builder
            .build_load(self.context.i64_type(), base, "")
            .expect("load")
            .into_int_value()
    }

    /// Branches to a new block `cached` when a block of `bytes` goes
    /// through the cache and to a new block `direct` when it is smaller
    /// than `CACHE_MIN_BYTES` (left to malloc and free); the two blocks.
    fn branch_on_size(
        &self,
        bytes: IntValue<'c>,
        cached: &str,
        direct: &str,
    ) -> (BasicBlock<'c>, BasicBlock<'c>) {
        let yes = self.block(cached);
        let no = self.block(direct);
        let big = self.icmp(IntPredicate::SGE, bytes, self.i64(CACHE_MIN_BYTES));
        self.builder
            .build_conditional_branch(big, yes, no)
            .expect("br");
        (yes, no)
    }

    /// `jx_take(bytes)`: a block's data from the cache (one of at least
    /// `bytes` and at most twice that) or from malloc; NULL when out of memory.
    fn take_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let ptr = self.ptr_ty();
        let ty = ptr.fn_type(&[self.context.i64_type().into()], false);
        self.internal_fn("jx_take", ty, &mut |f| {
            let bytes = f.get_first_param().expect("param").into_int_value();
            let (search, miss) = self.branch_on_size(bytes, "search", "miss");
            self.builder.position_at_end(search);
            self.for_range(self.i64(CACHE_SLOTS as i64), &mut |s| {
                let slot = self.slot_at(s);
                let p = self.cache_grab(slot);
                let found = self.block("found");
                let next = self.block("next");
                let empty = self.builder.build_is_null(p, "").expect("null");
                self.builder
                    .build_conditional_branch(empty, next, found)
                    .expect("br");
                self.builder.position_at_end(found);
                let cap = self.capacity(p);
                let fits = self.and(
                    self.icmp(IntPredicate::SGE, cap, bytes),
                    self.icmp(IntPredicate::SLE, cap, self.mul(bytes, self.i64(2))),
                );
                let hit = self.block("hit");
                let back = self.block("back");
                self.builder
                    .build_conditional_branch(fits, hit, back)
                    .expect("br");
                self.builder.position_at_end(hit);
                self.builder
                    .build_return(Some(&self.byte_offset(p, HEADER)))
                    .expect("ret");
                // Not this one: back into the slot, or freed if another
                // thread filled the slot meanwhile.
                self.builder.position_at_end(back);
                let put = self.cache_put(slot, p);
                let lost = self.block("lost");
                self.builder
                    .build_conditional_branch(put, next, lost)
                    .expect("br");
                self.builder.position_at_end(lost);
                self.libc_free(p);
                self.builder.build_unconditional_branch(next).expect("br");
                self.builder.position_at_end(next);
                Ok(())
            })?;
            self.builder.build_unconditional_branch(miss).expect("br");
            self.builder.position_at_end(miss);
            let base = self.libc_malloc(self.add(bytes, self.i64(HEADER)));
            let ok = self.block("ok");
            let oom = self.block("oom");
            let null = self.builder.build_is_null(base, "").expect("null");
            self.builder
                .build_conditional_branch(null, oom, ok)
                .expect("br");
            self.builder.position_at_end(oom);
            self.builder
                .build_return(Some(&ptr.const_null()))
                .expect("ret");
            self.builder.position_at_end(ok);
            self.builder.build_store(base, bytes).expect("store");
            self.builder
                .build_return(Some(&self.byte_offset(base, HEADER)))
                .expect("ret");
            Ok(())
        })
    }

    /// `jx_give(data)`: a block back to the cache, or to free.
    fn give_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let ty = self
            .context
            .void_type()
            .fn_type(&[self.ptr_ty().into()], false);
        self.internal_fn("jx_give", ty, &mut |f| {
            let data = f.get_first_param().expect("param").into_pointer_value();
            let base = self.byte_offset(data, -HEADER);
            let (keep, drop) = self.branch_on_size(self.capacity(base), "keep", "drop");
            self.builder.position_at_end(keep);
            self.for_range(self.i64(CACHE_SLOTS as i64), &mut |s| {
                let put = self.cache_put(self.slot_at(s), base);
                let done = self.block("kept");
                let next = self.block("next");
                self.builder
                    .build_conditional_branch(put, done, next)
                    .expect("br");
                self.builder.position_at_end(done);
                self.builder.build_return(None).expect("ret");
                self.builder.position_at_end(next);
                Ok(())
            })?;
            self.builder.build_unconditional_branch(drop).expect("br");
            self.builder.position_at_end(drop);
            self.libc_free(base);
            self.builder.build_return(None).expect("ret");
            Ok(())
        })
    }

    /// A destructor that frees the cached blocks when the library is
    /// unloaded (or the program exits).
    pub(crate) fn cache_destructor(&self) -> LowerResult<()> {
        let ty = self.context.void_type().fn_type(&[], false);
        let drain = self.internal_fn("jx_drain", ty, &mut |_| {
            self.for_range(self.i64(CACHE_SLOTS as i64), &mut |s| {
                let p = self.cache_grab(self.slot_at(s));
                // free(NULL) does nothing.
                self.libc_free(p);
                Ok(())
            })?;
            // The registry's table (the outputs still live are the
            // caller's to have given back).
            let table = self.registry()[1];
            let t = self
                .builder
                .build_load(self.ptr_ty(), table, "")
                .expect("load")
                .into_pointer_value();
            self.libc_free(t);
            self.builder
                .build_store(table, self.ptr_ty().const_null())
                .expect("store");
            self.builder.build_return(None).expect("ret");
            Ok(())
        })?;
        let i32t = self.context.i32_type();
        let entry_t = self.context.struct_type(
            &[i32t.into(), self.ptr_ty().into(), self.ptr_ty().into()],
            false,
        );
        let entry = entry_t.const_named_struct(&[
            i32t.const_int(65535, false).into(),
            drain.as_global_value().as_pointer_value().into(),
            self.ptr_ty().const_null().into(),
        ]);
        let t = entry_t.array_type(1);
        let g = self.module.add_global(t, None, "llvm.global_dtors");
        g.set_linkage(Linkage::Appending);
        g.set_initializer(&entry_t.const_array(&[entry]));
        Ok(())
    }

    /// An internal global of the registry of live outputs, zero at load.
    fn registry_global(
        &self,
        name: &str,
        t: inkwell::types::BasicTypeEnum<'c>,
    ) -> PointerValue<'c> {
        if let Some(g) = self.module.get_global(name) {
            return g.as_pointer_value();
        }
        let g = self.module.add_global(t, None, name);
        g.set_initializer(&t.const_zero());
        g.set_linkage(Linkage::Internal);
        g.as_pointer_value()
    }

    /// The registry's lock (0: free), table (NULL until the first output),
    /// capacity, slots in use (live and tombstones) and live pointers.
    fn registry(&self) -> [PointerValue<'c>; 5] {
        let i64t = self.context.i64_type().into();
        [
            self.registry_global("jx_reg_lock", self.context.i32_type().into()),
            self.registry_global("jx_reg_table", self.ptr_ty().into()),
            self.registry_global("jx_reg_cap", i64t),
            self.registry_global("jx_reg_used", i64t),
            self.registry_global("jx_reg_live", i64t),
        ]
    }

    /// Takes the registry's lock: an atomic exchange, and `sched_yield`
    /// while another thread holds it (held for a few dozen instructions,
    /// or a rehash; a thread that waits gives its core to the holder).
    fn registry_lock(&self) {
        let lock = self.registry()[0];
        let (_, [head, wait, locked]) = self.loop_enter(["lock", "wait", "locked"]);
        let old = self
            .builder
            .build_atomicrmw(
                AtomicRMWBinOp::Xchg,
                lock,
                self.i32(1),
                AtomicOrdering::Acquire,
            )
            .expect("xchg");
        let free = self.icmp(IntPredicate::EQ, old, self.i32(0));
        self.builder
            .build_conditional_branch(free, locked, wait)
            .expect("br");
        self.builder.position_at_end(wait);
        let sched_yield = self.extern_fn(
            "sched_yield",
            Some(self.context.i32_type().into()),
            &[],
            false,
        );
        self.call(sched_yield, &[]);
        self.builder.build_unconditional_branch(head).expect("br");
        self.builder.position_at_end(locked);
    }

    fn registry_unlock(&self) {
        let store = self
            .builder
            .build_store(self.registry()[0], self.i32(0))
            .expect("store");
        store.set_alignment(4).expect("align");
        store
            .set_atomic_ordering(AtomicOrdering::Release)
            .expect("release");
    }

    fn load_i64(&self, p: PointerValue<'c>) -> IntValue<'c> {
        self.builder
            .build_load(self.context.i64_type(), p, "")
            .expect("load")
            .into_int_value()
    }

    /// The address of slot `i` of a registry table.
    fn registry_slot(&self, table: PointerValue<'c>, i: IntValue<'c>) -> PointerValue<'c> {
        unsafe {
            self.builder
                .build_gep(self.context.i64_type(), table, &[i], "")
                .expect("gep")
        }
    }

    /// The first slot to probe for data pointer `p` (as an integer) in a
    /// table of `cap` slots: a multiplicative hash of the pointer.
    fn registry_start(&self, p: IntValue<'c>, cap: IntValue<'c>) -> IntValue<'c> {
        let x = self
            .builder
            .build_right_shift(p, self.i64(4), false, "")
            .expect("shr");
        let h = self.mul(x, self.i64(0x9E37_79B9_7F4A_7C15_u64 as i64));
        let hi = self
            .builder
            .build_right_shift(h, self.i64(32), false, "")
            .expect("shr");
        let h = self.builder.build_xor(h, hi, "").expect("xor");
        self.builder
            .build_and(h, self.sub(cap, self.i64(1)), "")
            .expect("and")
    }

    /// A loop that probes a table of `cap` slots from the slot of `p`, one
    /// slot after the other: `stop(word)` is built in the loop's body on
    /// the word of the slot probed and says whether to stop there. The
    /// builder continues after the loop; the index it stopped at is the
    /// result.
    fn registry_probe(
        &self,
        table: PointerValue<'c>,
        cap: IntValue<'c>,
        p: IntValue<'c>,
        stop: &mut dyn FnMut(IntValue<'c>) -> IntValue<'c>,
    ) -> IntValue<'c> {
        let i64t = self.context.i64_type();
        let at = self.slot(i64t.into());
        self.builder
            .build_store(at, self.registry_start(p, cap))
            .expect("store");
        let (_, [head, next, done]) = self.loop_enter(["probe", "next", "probed"]);
        let i = self.load_i64(at);
        let v = self.load_i64(self.registry_slot(table, i));
        let here = stop(v);
        self.builder
            .build_conditional_branch(here, done, next)
            .expect("br");
        self.builder.position_at_end(next);
        let j = self
            .builder
            .build_and(self.add(i, self.i64(1)), self.sub(cap, self.i64(1)), "")
            .expect("and");
        self.builder.build_store(at, j).expect("store");
        self.builder.build_unconditional_branch(head).expect("br");
        self.builder.position_at_end(done);
        self.load_i64(at)
    }

    /// `jx_reg_insert(table, cap, p)`: puts `p` into the first empty or
    /// tombstone slot from its own (the table has room; `p` is not in
    /// it); 1 when the slot was empty (one more slot in use), else 0.
    fn registry_insert_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let i64t = self.context.i64_type();
        let ty = i64t.fn_type(&[self.ptr_ty().into(), i64t.into(), i64t.into()], false);
        self.internal_fn("jx_reg_insert", ty, &mut |f| {
            let table = f.get_nth_param(0).expect("param").into_pointer_value();
            let cap = f.get_nth_param(1).expect("param").into_int_value();
            let p = f.get_nth_param(2).expect("param").into_int_value();
            let i = self.registry_probe(table, cap, p, &mut |v| {
                self.icmp(IntPredicate::ULE, v, self.i64(TOMBSTONE))
            });
            let slot = self.registry_slot(table, i);
            let was = self.load_i64(slot);
            self.builder.build_store(slot, p).expect("store");
            let empty = self.icmp(IntPredicate::EQ, was, self.i64(0));
            let r = self
                .builder
                .build_int_z_extend(empty, i64t, "")
                .expect("zext");
            self.builder.build_return(Some(&r)).expect("ret");
            Ok(())
        })
    }

    /// `jx_reg_add(pointers, n)`: records `n` outputs as live, growing the
    /// registry first when it would be more than 3/4 full; 0 (nothing
    /// recorded) when the larger table cannot be allocated, else 1.
    fn registry_add_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let i64t = self.context.i64_type();
        let ty = self
            .context
            .i32_type()
            .fn_type(&[self.ptr_ty().into(), i64t.into()], false);
        self.internal_fn("jx_reg_add", ty, &mut |f| {
            let ptrs = f.get_nth_param(0).expect("param").into_pointer_value();
            let n = f.get_nth_param(1).expect("param").into_int_value();
            let [_, table_g, cap_g, used_g, live_g] = self.registry();
            let insert = self.registry_insert_fn()?;
            self.registry_lock();
            let cap = self.load_i64(cap_g);
            let used = self.load_i64(used_g);
            let live = self.load_i64(live_g);
            let full = self.icmp(
                IntPredicate::UGT,
                self.mul(self.add(used, n), self.i64(4)),
                self.mul(cap, self.i64(3)),
            );
            let grow = self.block("grow");
            let room = self.block("room");
            self.builder
                .build_conditional_branch(full, grow, room)
                .expect("br");
            self.builder.position_at_end(grow);
            // The new capacity: the least power of two, at least
            // REGISTRY_MIN, of at least 4 slots a live pointer.
            let want = self.mul(self.add(live, n), self.i64(4));
            let new_cap = self.slot(i64t.into());
            self.builder
                .build_store(new_cap, self.i64(REGISTRY_MIN))
                .expect("store");
            let (_, [head, double, sized]) = self.loop_enter(["size", "double", "sized"]);
            let c = self.load_i64(new_cap);
            let small = self.icmp(IntPredicate::ULT, c, want);
            self.builder
                .build_conditional_branch(small, double, sized)
                .expect("br");
            self.builder.position_at_end(double);
            self.builder
                .build_store(new_cap, self.mul(c, self.i64(2)))
                .expect("store");
            self.builder.build_unconditional_branch(head).expect("br");
            self.builder.position_at_end(sized);
            let c = self.load_i64(new_cap);
            let calloc = self.extern_fn(
                "calloc",
                Some(self.ptr_ty().into()),
                &[i64t.into(), i64t.into()],
                false,
            );
            let new = self
                .call(calloc, &[c.into(), self.i64(8).into()])
                .expect("calloc")
                .into_pointer_value();
            let oom = self.block("oom");
            let rehash = self.block("rehash");
            self.builder
                .build_conditional_branch(
                    self.builder.build_is_null(new, "").expect("null"),
                    oom,
                    rehash,
                )
                .expect("br");
            self.builder.position_at_end(oom);
            self.registry_unlock();
            self.builder.build_return(Some(&self.i32(0))).expect("ret");
            self.builder.position_at_end(rehash);
            let old = self
                .builder
                .build_load(self.ptr_ty(), table_g, "")
                .expect("load")
                .into_pointer_value();
            self.for_range(cap, &mut |i| {
                let v = self.load_i64(self.registry_slot(old, i));
                let kept = self.icmp(IntPredicate::UGT, v, self.i64(TOMBSTONE));
                self.if_else(
                    kept,
                    &mut || {
                        self.call(insert, &[new.into(), c.into(), v.into()]);
                        Ok(())
                    },
                    &mut || Ok(()),
                )
            })?;
            self.libc_free(old);
            self.builder.build_store(table_g, new).expect("store");
            self.builder.build_store(cap_g, c).expect("store");
            self.builder.build_store(used_g, live).expect("store");
            self.builder.build_unconditional_branch(room).expect("br");
            self.builder.position_at_end(room);
            let table = self
                .builder
                .build_load(self.ptr_ty(), table_g, "")
                .expect("load")
                .into_pointer_value();
            let cap = self.load_i64(cap_g);
            self.for_range(n, &mut |k| {
                let at = unsafe {
                    self.builder
                        .build_gep(self.ptr_ty(), ptrs, &[k], "")
                        .expect("gep")
                };
                let p = self.load_i64(at);
                let took = self
                    .call(insert, &[table.into(), cap.into(), p.into()])
                    .expect("insert")
                    .into_int_value();
                self.builder
                    .build_store(used_g, self.add(self.load_i64(used_g), took))
                    .expect("store");
                Ok(())
            })?;
            self.builder
                .build_store(live_g, self.add(self.load_i64(live_g), n))
                .expect("store");
            self.registry_unlock();
            self.builder.build_return(Some(&self.i32(1))).expect("ret");
            Ok(())
        })
    }

    /// `jx_reg_remove(data)`: takes `data` out of the registry; 1 when it
    /// was there (a live output), else 0. Reads only the registry.
    fn registry_remove_fn(&self) -> LowerResult<FunctionValue<'c>> {
        let ty = self
            .context
            .i32_type()
            .fn_type(&[self.ptr_ty().into()], false);
        self.internal_fn("jx_reg_remove", ty, &mut |f| {
            let data = f.get_first_param().expect("param").into_pointer_value();
            let p = self
                .builder
                .build_ptr_to_int(data, self.context.i64_type(), "")
                .expect("ptrtoint");
            let [_, table_g, cap_g, _, live_g] = self.registry();
            self.registry_lock();
            let table = self
                .builder
                .build_load(self.ptr_ty(), table_g, "")
                .expect("load")
                .into_pointer_value();
            let search = self.block("search");
            let absent = self.block("absent");
            self.builder
                .build_conditional_branch(
                    self.builder.build_is_null(table, "").expect("null"),
                    absent,
                    search,
                )
                .expect("br");
            self.builder.position_at_end(search);
            let cap = self.load_i64(cap_g);
            let i = self.registry_probe(table, cap, p, &mut |v| {
                self.or(
                    self.icmp(IntPredicate::EQ, v, p),
                    self.icmp(IntPredicate::EQ, v, self.i64(0)),
                )
            });
            let slot = self.registry_slot(table, i);
            let found = self.icmp(IntPredicate::EQ, self.load_i64(slot), p);
            let present = self.block("present");
            self.builder
                .build_conditional_branch(found, present, absent)
                .expect("br");
            self.builder.position_at_end(present);
            self.builder
                .build_store(slot, self.i64(TOMBSTONE))
                .expect("store");
            self.builder
                .build_store(live_g, self.sub(self.load_i64(live_g), self.i64(1)))
                .expect("store");
            self.registry_unlock();
            self.builder.build_return(Some(&self.i32(1))).expect("ret");
            self.builder.position_at_end(absent);
            self.registry_unlock();
            self.builder.build_return(Some(&self.i32(0))).expect("ret");
            Ok(())
        })
    }

    /// A buffer for `n` elements of `dt` (checked), not registered in a scope.
    pub(crate) fn take(&self, dt: &DType, n: IntValue<'c>) -> LowerResult<PointerValue<'c>> {
        let size = Self::size_of(dt);
        let bad = self.or(
            self.icmp(IntPredicate::SLT, n, self.i64(0)),
            self.icmp(IntPredicate::SGT, n, self.i64(MAX_BYTES / size)),
        );
        self.fail_if(
            bad,
            "an array of %lld elements cannot be allocated",
            &[n.into()],
        );
        let bytes = self.mul(n, self.i64(size));
        let p = self
            .call(self.take_fn()?, &[bytes.into()])
            .expect("take")
            .into_pointer_value();
        let null = self.builder.build_is_null(p, "").expect("null");
        self.fail_if(null, "out of memory (%lld bytes)", &[bytes.into()]);
        Ok(p)
    }

    /// Gives a buffer from [`Codegen::take`] back.
    pub(crate) fn give(&self, p: PointerValue<'c>) -> LowerResult<()> {
        self.call(self.give_fn()?, &[self.reloaded(p).into()]);
        Ok(())
    }

    /// A new array owned by the current scope.
    pub fn alloc(&self, dt: &DType, dims: &[IntValue<'c>]) -> LowerResult<Arr<'c>> {
        let what = match self.fun.current.get() {
            Some((name, at)) => format!("`{name}` at byte {}", at.start),
            None => "an array".to_string(),
        };
        let n = self.checked_count(dims, Self::size_of(dt), &what);
        let p = self.scratch(dt, n)?;
        Ok(Arr::new(p, dims.to_vec()))
    }

    /// A buffer of `n` elements owned by the current scope (given back at
    /// its end, or earlier with [`Codegen::release`]).
    pub(crate) fn scratch(&self, dt: &DType, n: IntValue<'c>) -> LowerResult<PointerValue<'c>> {
        let p = self.take(dt, n)?;
        self.adopt(p);
        Ok(p)
    }

    /// Gives a buffer of the current scope back before the scope ends.
    pub(crate) fn release(&self, p: PointerValue<'c>) -> LowerResult<()> {
        if self.fun.tabled.borrow().contains(&p) {
            self.give(p)?;
            self.untable(p);
            return Ok(());
        }
        if let Some(s) = self.fun.scopes.borrow_mut().last_mut() {
            s.retain(|q| *q != p);
        }
        self.give(p)
    }

    fn copy_into(&self, x: &Op<'c>, p: PointerValue<'c>) -> LowerResult<Arr<'c>> {
        let dt = dtype(&x.ty)?;
        let bytes = self.mul(self.numel(&x.v.dims), self.i64(Self::size_of(&dt)));
        self.builder
            .build_memcpy(p, 1, self.reloaded(x.v.p), 1, bytes)
            .expect("memcpy");
        Ok(Arr::new(p, x.v.dims.clone()))
    }

    /// A fresh copy that no scope owns.
    pub fn copy_fresh(&self, x: &Op<'c>) -> LowerResult<Arr<'c>> {
        let p = self.take(&dtype(&x.ty)?, self.numel(&x.v.dims))?;
        self.copy_into(x, p)
    }

    /// The library's outputs, handed to the caller, who gives them back
    /// with `NAME_free`: a buffer of the entry function's table is handed
    /// over as it is (the output is computed in place; copying a large
    /// result out of it cost as much as computing it), any other value (a
    /// view, an input, a constant, a buffer already handed over) is copied
    /// into a new block first. The copies come first, into the table, and
    /// only then is anything handed over, so that a failure gives back
    /// everything.
    pub(crate) fn outputs(&self, outs: &[Op<'c>]) -> LowerResult<Vec<Arr<'c>>> {
        let mut handed: Vec<PointerValue<'c>> = Vec::new();
        let mut arrays = Vec::new();
        for o in outs {
            let own = self.fun.tabled.borrow().contains(&o.v.p) && !handed.contains(&o.v.p);
            let x = if own {
                o.v.clone()
            } else {
                let c = self.copy_fresh(o)?;
                self.adopt(c.p);
                c
            };
            handed.push(x.p);
            arrays.push(x);
        }
        // Recorded as live (for `NAME_free`) in one step, before anything
        // is handed over: when the registry cannot grow, the call fails
        // with nothing recorded and everything given back.
        if !arrays.is_empty() {
            let list = self.slot(self.ptr_ty().array_type(arrays.len() as u32).into());
            for (k, x) in arrays.iter().enumerate() {
                let at = unsafe {
                    self.builder
                        .build_gep(self.ptr_ty(), list, &[self.i64(k as i64)], "")
                        .expect("gep")
                };
                self.builder
                    .build_store(at, self.reloaded(x.p))
                    .expect("store");
            }
            let ok = self
                .call(
                    self.registry_add_fn()?,
                    &[list.into(), self.i64(arrays.len() as i64).into()],
                )
                .expect("add")
                .into_int_value();
            self.fail_if(
                self.icmp(IntPredicate::EQ, ok, self.i32(0)),
                "out of memory (the registry of live outputs)",
                &[],
            );
        }
        Ok(arrays
            .into_iter()
            .map(|x| {
                let data = self.reloaded(x.p);
                self.untable(x.p);
                Arr::new(data, x.dims)
            })
            .collect())
    }

    /// `NAME_free(data)`: an output back to the block cache (NULL:
    /// nothing). A pointer that is not a live output (freed already, an
    /// input, the caller's own memory, a pointer into an output) is not
    /// given back: the message for `NAME_error` says so, and nothing else
    /// happens (the memory it points to is never read).
    pub(crate) fn free_output(&self, data: PointerValue<'c>) -> LowerResult<()> {
        let null = self.builder.build_is_null(data, "").expect("null");
        self.if_else(null, &mut || Ok(()), &mut || {
            let live = self.call(self.registry_remove_fn()?, &[data.into()]).expect("remove").into_int_value();
            let live = self.icmp(IntPredicate::NE, live, self.i32(0));
            self.if_else(live, &mut || self.give(data), &mut || {
                let msg = format!(
                    "{}_free(%p): not a live output of this library (freed already, or never one of its outputs: an input, the caller's memory, a pointer inside an output); nothing was freed",
                    self.lib.name
                );
                self.report(&msg, &[data.into()]);
                Ok(())
            })
        })
    }

    pub fn scope_begin(&self) {
        self.fun.scopes.borrow_mut().push(Vec::new());
    }

    /// Ends a scope: the values of `keep` leave it (their buffers handed
    /// over when the scope owns them, copied otherwise), the rest of what
    /// the scope owns is given back.
    pub fn scope_end(&self, keep: &[Op<'c>]) -> LowerResult<Vec<Arr<'c>>> {
        if let Some(t) = self.open_table() {
            let mut kept = Vec::new();
            for x in keep {
                if self.untable(x.v.p) {
                    kept.push(x.v.clone());
                } else {
                    kept.push(self.copy_fresh(x)?);
                }
            }
            self.give_table(t)?;
            self.fun.scopes.borrow_mut().pop();
            return Ok(kept);
        }
        let mut owned = self.fun.scopes.borrow().last().cloned().unwrap_or_default();
        let mut kept = Vec::new();
        for x in keep {
            match owned.iter().position(|p| *p == x.v.p) {
                Some(i) => {
                    owned.swap_remove(i);
                    kept.push(x.v.clone());
                }
                None => kept.push(self.copy_fresh(x)?),
            }
        }
        self.fun.scopes.borrow_mut().pop();
        for p in owned {
            self.give(p)?;
        }
        Ok(kept)
    }

    /// Gives a buffer to the current scope.
    pub fn adopt(&self, p: PointerValue<'c>) {
        if self.fun.tabled.borrow().contains(&p) {
            return;
        }
        if let Some((home, at)) = self.table_words(1) {
            self.builder.build_store(home, p).expect("store");
            self.tabled_at(p, at);
            return;
        }
        if let Some(s) = self.fun.scopes.borrow_mut().last_mut() {
            s.push(p);
        }
    }

    /// While a loop's body and condition are built, its state arrays
    /// (owned by no scope) are given back on failure too.
    pub(crate) fn loop_state_begin(&self, arrays: Vec<PointerValue<'c>>) {
        self.fun.loop_states.borrow_mut().push(arrays);
    }

    pub(crate) fn loop_state_end(&self) {
        self.fun.loop_states.borrow_mut().pop();
    }

    /// The block a failure jumps to: it gives back everything open scopes
    /// and loops hold, then returns 1. Exits are shared: the one for held
    /// buffers `[a, b, c]` gives `c` back and continues in the one for
    /// `[a, b]`, so each buffer is given back in one place.
    pub(crate) fn unwind_block(&self) -> inkwell::basic_block::BasicBlock<'c> {
        let held: Vec<PointerValue> = self
            .fun
            .scopes
            .borrow()
            .iter()
            .chain(self.fun.loop_states.borrow().iter())
            .flatten()
            .copied()
            .collect();
        self.unwind_for(&held)
    }

    fn unwind_for(&self, held: &[PointerValue<'c>]) -> inkwell::basic_block::BasicBlock<'c> {
        if let Some(&bb) = self.fun.unwinds.borrow().get(held) {
            return bb;
        }
        let here = self.builder.get_insert_block();
        let bb = self.block("unwind");
        self.builder.position_at_end(bb);
        match held.split_last() {
            None => {
                if let Some(t) = self
                    .fun
                    .table
                    .get()
                    .filter(|t| self.fun.func.get() == Some(t.owner))
                {
                    // give_table only fails on internal errors of its own IR.
                    let _ = self.give_table(t);
                }
                self.builder.build_return(Some(&self.i32(1))).expect("ret");
            }
            Some((&last, rest)) => {
                // give_fn only fails on internal errors of its own IR.
                if let Ok(give) = self.give_fn() {
                    self.call(give, &[self.reloaded(last).into()]);
                }
                let next = self.unwind_for(rest);
                self.builder.position_at_end(bb);
                self.builder.build_unconditional_branch(next).expect("br");
            }
        }
        if let Some(h) = here {
            self.builder.position_at_end(h);
        }
        self.fun.unwinds.borrow_mut().insert(held.to_vec(), bb);
        bb
    }
}
