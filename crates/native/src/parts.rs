//! Optimisation and code generation of a library's module in parts, on
//! threads, as LLVM's own parallel code generation does (`splitCodeGen`):
//! the module is written as bitcode once, and each thread reads it into a
//! context of its own (an LLVM context is not thread-safe), keeps the
//! bodies of its share of the functions, turns the others into
//! declarations, and optimises and generates an object for what is left;
//! the objects are linked into one library.
//!
//! Why: LLVM's pipeline and code generation run on one thread, and for a
//! small program (two transformer blocks: 77 kernels) they were nearly the
//! whole build. A library's functions are mostly kernels, each called
//! from the entry function and otherwise independent, so they split
//! cleanly.
//!
//! What each part holds: the functions built once ([`Split::owned`]:
//! kernels, let functions, the entry point and its pieces, the exported
//! functions) are defined in exactly one part and declared in the others,
//! with hidden visibility (so the linker resolves them inside the library
//! and exports nothing new). Every other function (the small helpers
//! `jx_take`, `jx_give`, ...) is a private copy in each part that uses it,
//! so it is inlined where it was before. Constant globals (literals,
//! messages, extents) are private copies too, so kernels still see their
//! values; the mutable ones (the block cache, the error buffer) are
//! defined once, in the first part, which also keeps the destructor list.

use inkwell::GlobalVisibility;
use inkwell::OptimizationLevel;
use inkwell::context::Context;
use inkwell::memory_buffer::MemoryBuffer;
use inkwell::module::{Linkage, Module};
use inkwell::passes::PassBuilderOptions;
use inkwell::targets::{CodeModel, FileType, RelocMode, Target, TargetMachine, TargetTriple};
use inkwell::values::{FunctionValue, GlobalValue};
use rustc_hash::FxHashMap as HashMap;

/// How to make the target machine, in any thread.
#[derive(Clone)]
pub(super) struct Machine {
    pub triple: String,
    pub cpu: String,
    pub features: String,
    pub level: OptimizationLevel,
}

impl Machine {
    pub fn create(&self) -> Option<TargetMachine> {
        let triple = TargetTriple::create(&self.triple);
        let target = Target::from_triple(&triple).ok()?;
        target.create_target_machine(
            &triple,
            &self.cpu,
            &self.features,
            self.level,
            RelocMode::PIC,
            CodeModel::Default,
        )
    }
}

/// Which part defines each function that is built once.
pub(super) struct Split {
    /// By name: the part that defines it.
    owned: HashMap<String, usize>,
    parts: usize,
}

/// What LLVM's work on a function costs, roughly, in units of about 50 µs
/// (measured on the kernels of two transformer blocks): a fixed part and
/// one unit per instruction, a third of that in a function it does not
/// optimise ([`without_optimisation`]).
fn cost(f: FunctionValue<'_>) -> usize {
    let instructions: usize = f
        .get_basic_block_iter()
        .map(|b| b.get_instructions().count())
        .sum();
    let optnone = inkwell::attributes::Attribute::get_named_enum_kind_id("optnone");
    if f.get_enum_attribute(inkwell::attributes::AttributeLoc::Function, optnone)
        .is_some()
    {
        return 30 + instructions / 3;
    }
    100 + instructions
}

impl Split {
    /// Assigns `owned` (the functions built once) to at most `threads`
    /// parts, costliest first to the least loaded part ([`cost`]). `first` (the entry
    /// point and the functions exported beside it) goes to part 0.
    pub fn new(owned: &[FunctionValue<'_>], first: &[FunctionValue<'_>], threads: usize) -> Split {
        let mut sized: Vec<(usize, String)> = owned
            .iter()
            .map(|&f| (cost(f), f.get_name().to_string_lossy().into_owned()))
            .collect();
        sized.sort_by(|a, b| b.cmp(a));
        let parts = threads.clamp(1, sized.len().max(1));
        let mut load = vec![0usize; parts];
        let mut map = HashMap::default();
        for &f in first {
            load[0] += cost(f);
            map.insert(f.get_name().to_string_lossy().into_owned(), 0);
        }
        for (cost, name) in sized {
            if map.contains_key(&name) {
                continue;
            }
            let (k, _) = load
                .iter()
                .enumerate()
                .min_by_key(|(_, l)| **l)
                .expect("a part");
            load[k] += cost;
            map.insert(name, k);
        }
        Split { owned: map, parts }
    }

    /// Prepares `m` for splitting: the owned functions and the mutable
    /// globals become hidden symbols that every part can name.
    pub fn expose(&self, m: &Module<'_>) {
        for f in m.get_functions() {
            let name = f.get_name().to_string_lossy();
            if self.owned.contains_key(name.as_ref()) && is_local(f.get_linkage()) {
                hide(f.as_global_value());
            }
        }
        for g in m.get_globals() {
            if !g.is_constant() && is_local(g.get_linkage()) && !is_llvm(g) {
                hide(g);
            }
        }
    }

    /// Part `k` of the module in `bitcode`, optimised with `passes` and
    /// compiled to an object.
    pub fn object(
        &self,
        k: usize,
        bitcode: &[u8],
        passes: &str,
        machine: &Machine,
    ) -> Result<Vec<u8>, String> {
        let cx = Context::create();
        let buf = MemoryBuffer::create_from_memory_range_copy(bitcode, "library");
        let m = Module::parse_bitcode_from_buffer(&buf, &cx)
            .map_err(|e| format!("LLVM could not read the module back: {e}"))?;
        let elsewhere: Vec<FunctionValue> = m
            .get_functions()
            .filter(|f| f.count_basic_blocks() > 0)
            .filter(|f| {
                let name = f.get_name().to_string_lossy();
                self.owned.get(name.as_ref()).is_some_and(|&p| p != k)
            })
            .collect();
        for f in elsewhere {
            declare_function(&m, f);
        }
        if k != 0 {
            let globals: Vec<GlobalValue> = m.get_globals().collect();
            for g in globals {
                if g.get_name().to_bytes() == b"llvm.global_dtors" {
                    // SAFETY: the destructor list is referred to by nothing.
                    unsafe { g.delete() };
                } else if !g.is_constant() && !is_llvm(g) && !g.is_declaration() {
                    declare_global(&m, g);
                }
            }
        }
        let tm = machine
            .create()
            .ok_or_else(|| "LLVM has no target machine for this host".to_string())?;
        let read = thread_cpu();
        m.run_passes(passes, &tm, PassBuilderOptions::create())
            .map_err(|e| format!("LLVM's pass pipeline failed: {e}"))?;
        let optimised = thread_cpu();
        let obj = tm
            .write_to_memory_buffer(&m, FileType::Object)
            .map_err(|e| format!("LLVM could not emit the object: {e}"))?;
        if std::env::var_os("JAXPR_BUILD_TIMINGS").is_some() {
            let defined = self.owned.values().filter(|&&p| p == k).count();
            eprintln!(
                "part {k}: {defined} functions; CPU time: read {read:.2?}, optimise {:.2?}, code generation {:.2?}",
                optimised - read,
                thread_cpu() - optimised,
            );
        }
        Ok(obj.as_slice().to_vec())
    }

    /// Every part's object, built on threads of their own.
    pub fn objects(
        &self,
        bitcode: &[u8],
        passes: &str,
        machine: &Machine,
    ) -> Result<Vec<Vec<u8>>, String> {
        std::thread::scope(|scope| {
            let threads: Vec<_> = (0..self.parts)
                .map(|k| {
                    std::thread::Builder::new()
                        // LLVM recurses over long chains of blocks; the
                        // stack is only reserved.
                        .stack_size(1 << 30)
                        .spawn_scoped(scope, move || self.object(k, bitcode, passes, machine))
                        .map_err(|e| format!("could not start a code generation thread: {e}"))
                })
                .collect();
            threads
                .into_iter()
                .map(|t| {
                    t?.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                })
                .collect()
        })
    }
}

/// The CPU time of the calling thread.
fn thread_cpu() -> std::time::Duration {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    std::time::Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// Whether a function has no loop (no edge back to a block on the path
/// that reached it).
pub(super) fn straight(f: FunctionValue<'_>) -> bool {
    use inkwell::basic_block::BasicBlock;
    use inkwell::values::Operand;
    let Some(entry) = f.get_first_basic_block() else {
        return true;
    };
    // 1: on the current path, 2: done.
    let mut state: HashMap<BasicBlock, u8> = HashMap::default();
    fn successors(b: BasicBlock<'_>) -> Vec<BasicBlock<'_>> {
        let Some(t) = b.get_terminator() else {
            return Vec::new();
        };
        (0..t.get_num_operands())
            .filter_map(|k| match t.get_operand(k) {
                Some(Operand::Block(s)) => Some(s),
                _ => None,
            })
            .collect()
    }
    let mut stack = vec![(entry, successors(entry), 0usize)];
    state.insert(entry, 1);
    while let Some((b, next, k)) = stack.last_mut() {
        let Some(&s) = next.get(*k) else {
            state.insert(*b, 2);
            stack.pop();
            continue;
        };
        *k += 1;
        match state.get(&s) {
            Some(1) => return false,
            Some(_) => {}
            None => {
                state.insert(s, 1);
                let after = successors(s);
                stack.push((s, after, 0));
            }
        }
    }
    true
}

/// Marks a function that only calls others and checks values (the entry
/// function of a program whose work is all in kernels, and its parts) to
/// be neither optimised nor compiled with the optimising code generator:
/// LLVM's time on it grows with the program, and what it does (a call per
/// kernel, volatile reads of the buffer table) gains nothing from either.
pub(super) fn without_optimisation(cx: &Context, f: FunctionValue<'_>) {
    use inkwell::attributes::{Attribute, AttributeLoc};
    for attribute in ["optnone", "noinline"] {
        let kind = Attribute::get_named_enum_kind_id(attribute);
        f.add_attribute(AttributeLoc::Function, cx.create_enum_attribute(kind, 0));
    }
}

fn is_local(l: Linkage) -> bool {
    matches!(l, Linkage::Private | Linkage::Internal)
}

/// `llvm.used`, `llvm.global_dtors`, ...: LLVM's own lists.
fn is_llvm(g: GlobalValue<'_>) -> bool {
    g.get_name().to_bytes().starts_with(b"llvm.")
}

fn hide(g: GlobalValue<'_>) {
    g.set_linkage(Linkage::External);
    g.set_visibility(GlobalVisibility::Hidden);
}

/// Replaces a function defined here by a declaration of the same name.
fn declare_function<'c>(m: &Module<'c>, f: FunctionValue<'c>) {
    let name = f.get_name().to_string_lossy().into_owned();
    let visibility = f.as_global_value().get_visibility();
    let decl = m.add_function("", f.get_type(), Some(Linkage::External));
    decl.as_global_value().set_visibility(visibility);
    f.replace_all_uses_with(decl);
    // SAFETY: nothing refers to `f` any more.
    unsafe { f.delete() };
    decl.as_global_value().set_name(&name);
}

/// Replaces a global variable defined here by a declaration of the same
/// name (defined by part 0).
fn declare_global<'c>(m: &Module<'c>, g: GlobalValue<'c>) {
    let name = g.get_name().to_string_lossy().into_owned();
    let ty = inkwell::types::BasicTypeEnum::try_from(g.get_value_type())
        .expect("a global's type is a basic type");
    let decl = m.add_global(ty, None, "");
    decl.set_linkage(Linkage::External);
    decl.set_visibility(GlobalVisibility::Hidden);
    decl.set_thread_local_mode(g.get_thread_local_mode());
    decl.set_alignment(g.get_alignment());
    g.as_pointer_value()
        .replace_all_uses_with(decl.as_pointer_value());
    // SAFETY: nothing refers to `g` any more.
    unsafe { g.delete() };
    decl.set_name(&name);
}

/// Gives every symbol `m` defines, but `exports`, a name beginning with
/// `prefix`, so that two modules' objects link into one library.
pub(super) fn rename_unexported(m: &Module<'_>, exports: &[FunctionValue<'_>], prefix: &str) {
    let keep: Vec<String> = exports
        .iter()
        .map(|f| f.get_name().to_string_lossy().into_owned())
        .collect();
    for f in m.get_functions() {
        let name = f.get_name().to_string_lossy().into_owned();
        if f.count_basic_blocks() > 0 && !keep.contains(&name) && !name.starts_with("llvm.") {
            f.as_global_value().set_name(&format!("{prefix}{name}"));
        }
    }
    for g in m.get_globals() {
        let name = g.get_name().to_string_lossy().into_owned();
        if g.get_initializer().is_some() && !is_llvm(g) {
            g.set_name(&format!("{prefix}{name}"));
        }
    }
}
