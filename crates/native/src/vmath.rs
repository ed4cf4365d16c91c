//! glibc's vector math library (libmvec) for LLVM's loop vectorizer: a
//! libm call in a loop carries the attribute `vector-function-abi-variant`
//! naming libmvec's versions of its function (`_ZGVdN8v_tanhf` computes 8
//! `tanhf` at once with AVX2), so the vectorizer can vectorize the loop
//! instead of calling the scalar function once per element. (LLVM's own
//! `-vector-library=LIBMVEC` mapping is not reachable through the C API's
//! pass builder, and knows only six functions.) libmvec's results are
//! within 4 ulp of the exact ones.

use super::Codegen;
use inkwell::module::Linkage;
use inkwell::types::FloatType;
use std::sync::OnceLock;

/// libm functions (double names) that libmvec has, with the glibc 2.x
/// release that added them.
const FUNCTIONS: &[(&str, u32)] = &[
    ("sin", 22),
    ("cos", 22),
    ("exp", 22),
    ("log", 22),
    ("pow", 22),
    ("tan", 35),
    ("tanh", 35),
    ("exp2", 35),
    ("expm1", 35),
    ("log1p", 35),
    ("log2", 35),
    ("log10", 35),
    ("atan", 35),
    ("atan2", 35),
    ("asin", 35),
    ("acos", 35),
    ("sinh", 35),
    ("cosh", 35),
    ("asinh", 35),
    ("acosh", 35),
    ("atanh", 35),
    ("cbrt", 35),
    ("erf", 35),
    ("erfc", 35),
];

struct Libmvec {
    /// glibc's minor version (2.x).
    minor: u32,
}

/// libmvec's vector ISAs for a processor, with their register bytes: `b`
/// (SSE) always, `d` (AVX2) when the processor has it.
pub(crate) fn isas(cpu: super::Cpu) -> &'static [(char, u32)] {
    if cpu.has_avx2() {
        &[('b', 16), ('d', 32)]
    } else {
        &[('b', 16)]
    }
}

fn libmvec() -> Option<&'static Libmvec> {
    static LIB: OnceLock<Option<Libmvec>> = OnceLock::new();
    LIB.get_or_init(|| {
        if !cfg!(all(
            target_arch = "x86_64",
            target_os = "linux",
            target_env = "gnu"
        )) {
            return None;
        }
        let out = std::process::Command::new("getconf")
            .arg("GNU_LIBC_VERSION")
            .output()
            .ok()?;
        // "glibc 2.36"
        let text = String::from_utf8_lossy(&out.stdout);
        let minor: u32 = text
            .trim()
            .strip_prefix("glibc 2.")?
            .split('.')
            .next()?
            .parse()
            .ok()?;
        if minor < 22 {
            return None;
        }
        Some(Libmvec { minor })
    })
    .as_ref()
}

/// Whether libraries link libmvec.
pub(crate) fn available() -> bool {
    libmvec().is_some()
}

impl<'c> Codegen<'c, '_> {
    /// The value of `vector-function-abi-variant` for a call of `fname`
    /// (libm's name of `name` for `t`) with `nargs` arguments; the variants
    /// are declared in the module. None when libmvec lacks the function.
    pub(crate) fn vector_variants(
        &self,
        fname: &str,
        name: &str,
        t: FloatType<'c>,
        nargs: usize,
    ) -> Option<String> {
        let lib = libmvec()?;
        let &(_, since) = FUNCTIONS.iter().find(|(n, _)| *n == name)?;
        if lib.minor < since {
            return None;
        }
        let elem = if t == self.context.f64_type() { 8 } else { 4 };
        let mut variants = Vec::new();
        for &(isa, bytes) in self.lib.vector_isas {
            let lanes = bytes / elem;
            let vname = format!("_ZGV{isa}N{lanes}{}_{fname}", "v".repeat(nargs));
            let vt = t.vec_type(lanes);
            if self.module.get_function(&vname).is_none() {
                let f = self.module.add_function(
                    &vname,
                    vt.fn_type(&vec![vt.into(); nargs], false),
                    Some(Linkage::External),
                );
                self.items.vector_functions.borrow_mut().push(f);
            }
            variants.push(format!("{vname}({vname})"));
        }
        Some(variants.join(","))
    }

    /// `llvm.compiler.used` with the declared variants, so that no pass
    /// drops a declaration before the vectorizer looks for it.
    pub(crate) fn keep_vector_functions(&self) {
        let fs = self.items.vector_functions.borrow();
        if fs.is_empty() {
            return;
        }
        let ptrs: Vec<_> = fs
            .iter()
            .map(|f| f.as_global_value().as_pointer_value())
            .collect();
        let t = self.ptr_ty().array_type(ptrs.len() as u32);
        let g = self.module.add_global(t, None, "llvm.compiler.used");
        g.set_linkage(Linkage::Appending);
        g.set_section(Some("llvm.metadata"));
        g.set_initializer(&self.ptr_ty().const_array(&ptrs));
    }
}
