//! The verified module as MLIR text.
//!
//! MLIR's own printer costs more than building the module: it writes
//! through an unbuffered stream and a callback per token, prints every
//! type again at each use, and numbers values in a pass of its own. The
//! modules the lowering builds have one shape (a `module` holding
//! `func.func @main`, whose body is StableHLO and CHLO operations in
//! generic form with single-block regions, then `func.return`), so this
//! printer walks that shape through MLIR's C API: each distinct type and
//! attribute is printed once by MLIR itself and reused, values are
//! numbered as they are defined, and the text goes to the output in chunks
//! of one reused buffer (a module of 20 MB is never held in memory: on this
//! machine, touching fresh memory costs as much as printing into it).
//!
//! A module of another shape (successors, several blocks in a region,
//! other registered operations, attributes on the function) is printed by
//! MLIR's printer instead, so the text is always that of the module MLIR
//! verified.

use melior::ir::Module;
use mlir_sys::{
    MlirAttribute, MlirBlock, MlirOperation, MlirStringRef, MlirType, MlirValue,
    mlirAttributePrint, mlirBlockGetArgument, mlirBlockGetFirstOperation, mlirBlockGetNextInRegion,
    mlirBlockGetNumArguments, mlirFunctionTypeGetNumResults, mlirFunctionTypeGetResult,
    mlirIdentifierStr, mlirOperationGetAttribute, mlirOperationGetDiscardableAttribute,
    mlirOperationGetName, mlirOperationGetNextInBlock, mlirOperationGetNumAttributes,
    mlirOperationGetNumDiscardableAttributes, mlirOperationGetNumOperands,
    mlirOperationGetNumRegions, mlirOperationGetNumResults, mlirOperationGetNumSuccessors,
    mlirOperationGetOperand, mlirOperationGetRegion, mlirOperationGetResult,
    mlirRegionGetFirstBlock, mlirStringAttrGetValue, mlirTypeAttrGetValue, mlirTypePrint,
    mlirValueGetType,
};
use rustc_hash::FxHashMap as HashMap;
use std::io::{self, Write};

/// A module of the shape this printer prints (see the module
/// documentation), ready to print: its function and the function's
/// attributes.
///
/// The attributes are read here, by [`Printable::check`], because reading
/// them (`mlirOperationGetAttribute` on `func.func`, whose attributes are
/// properties) looks names and a dictionary up in the context's uniquer.
/// Printing then reads the module's operations and prints types and
/// attributes that exist, and never asks the context for one: it may run
/// while MLIR's verifier runs on another thread, whose diagnostics (only
/// when the module does not verify) print operations and may add
/// attributes to the context, which a context without threads does not
/// lock.
pub(super) struct Printable {
    func: MlirOperation,
    attrs: FunctionAttributes,
}

// SAFETY: a module is only read once checked, and the caller keeps it
// alive and unchanged while it is printed (on any thread).
unsafe impl Send for Printable {}

impl Printable {
    /// The module, when it has the shape this printer prints; else it is
    /// for [`mlir_text`]. The check walks the blocks of the module, which
    /// must not be read concurrently with MLIR's verifier (it updates the
    /// blocks' cached order of operations), unlike the printing.
    pub fn check(module: &Module) -> Option<Printable> {
        // SAFETY: the module is alive; this only reads it.
        unsafe { main_function(module.as_operation().to_raw()) }
    }

    /// Writes the module as MLIR text to `out`; `ops` is the number of
    /// operations in it (to size the table of value names once).
    pub fn write(&self, ops: usize, out: &mut dyn Write) -> io::Result<()> {
        let mut p = Printer {
            out: Vec::with_capacity(CHUNK + CHUNK / 4),
            sink: out,
            values: HashMap::with_capacity_and_hasher(ops + 64, Default::default()),
            types: HashMap::default(),
            attrs: HashMap::default(),
            next_result: 0,
            next_arg: 0,
        };
        p.out.extend_from_slice(b"module {\n");
        // SAFETY: the module has the checked shape and is alive and
        // unchanged while it is printed; the printer only reads it.
        unsafe { p.func(self.func, &self.attrs)? };
        p.out.extend_from_slice(b"}\n");
        p.flush()
    }
}

/// How much text is gathered before it is written: large enough that
/// writes are few, small enough to stay in cache.
const CHUNK: usize = 256 << 10;

// ---- the shape this printer prints -------------------------------------------

/// The module's function and its attributes, when the module has the
/// shape this printer prints (see the module documentation).
unsafe fn main_function(module: MlirOperation) -> Option<Printable> {
    unsafe {
        if mlirOperationGetNumAttributes(module) != 0 {
            return None;
        }
        let func = mlirBlockGetFirstOperation(single_block(module, 0)?);
        if func.ptr.is_null()
            || !mlirOperationGetNextInBlock(func).ptr.is_null()
            || op_name(func) != b"func.func"
        {
            return None;
        }
        let attrs = function_attributes(func)?;
        let name = str_of(mlirStringAttrGetValue(attrs.sym_name));
        if !name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            return None;
        }
        let mut op = mlirBlockGetFirstOperation(single_block(func, 0)?);
        while !op.ptr.is_null() {
            let next = mlirOperationGetNextInBlock(op);
            let fits = if next.ptr.is_null() {
                op_name(op) == b"func.return" && mlirOperationGetNumAttributes(op) == 0
            } else {
                generic_op_fits(op)
            };
            if !fits {
                return None;
            }
            op = next;
        }
        Some(Printable { func, attrs })
    }
}

/// A StableHLO or CHLO operation without successors, whose regions have
/// one block each and whose attribute names need no quotes.
///
/// Its attributes are read as MLIR's "discardable" ones, which are all it
/// has: the dialects are unregistered, and an unregistered operation keeps
/// in its properties only what it was created with there, which the
/// lowering never gives (its operations are built from attributes alone).
/// `mlirOperationGetAttribute` would give the same list, but for an
/// operation that has room for properties (every unregistered one) it
/// merges them into a new dictionary on each call, through the context's
/// uniquer: about a fifth of the printer's time, and a lookup in a table
/// the verifier, running at the same time, may be adding to.
unsafe fn generic_op_fits(op: MlirOperation) -> bool {
    unsafe {
        let name = op_name(op);
        if !(name.starts_with(b"stablehlo.") || name.starts_with(b"chlo."))
            || mlirOperationGetNumSuccessors(op) != 0
        {
            return false;
        }
        let bare_names = (0..mlirOperationGetNumDiscardableAttributes(op)).all(|i| {
            is_bare_identifier(str_of(mlirIdentifierStr(
                mlirOperationGetDiscardableAttribute(op, i).name,
            )))
        });
        bare_names
            && (0..mlirOperationGetNumRegions(op)).all(|r| match single_block(op, r) {
                Some(block) => {
                    let mut inner = mlirBlockGetFirstOperation(block);
                    while !inner.ptr.is_null() {
                        if !generic_op_fits(inner) {
                            return false;
                        }
                        inner = mlirOperationGetNextInBlock(inner);
                    }
                    true
                }
                None => false,
            })
    }
}

/// The attributes the lowering gives the function (and it has no others).
struct FunctionAttributes {
    sym_name: MlirAttribute,
    sym_visibility: Option<MlirAttribute>,
    function_type: MlirAttribute,
}

unsafe fn function_attributes(func: MlirOperation) -> Option<FunctionAttributes> {
    unsafe {
        let (mut sym, mut visibility, mut fty) = (None, None, None);
        for i in 0..mlirOperationGetNumAttributes(func) {
            let a = mlirOperationGetAttribute(func, i);
            let slot = match str_of(mlirIdentifierStr(a.name)) {
                b"sym_name" => &mut sym,
                b"sym_visibility" => &mut visibility,
                b"function_type" => &mut fty,
                _ => return None,
            };
            *slot = Some(a.attribute);
        }
        Some(FunctionAttributes {
            sym_name: sym?,
            sym_visibility: visibility,
            function_type: fty?,
        })
    }
}

// ---- printing -------------------------------------------------------------------

/// What a value is called in the text.
#[derive(Clone, Copy)]
enum Name {
    /// `%N`, or `%N#k` for result `k` of an operation with several.
    Result { id: u32, index: Option<u32> },
    /// `%argN`: a block argument.
    Arg(u32),
}

struct Printer<'w> {
    /// Text not yet written to `sink`.
    out: Vec<u8>,
    sink: &'w mut dyn Write,
    /// Names of the values defined so far, by their MLIR address.
    values: HashMap<usize, Name>,
    /// Text of each distinct type and attribute, printed once by MLIR.
    types: HashMap<usize, Box<[u8]>>,
    attrs: HashMap<usize, Box<[u8]>>,
    next_result: u32,
    next_arg: u32,
}

impl Printer<'_> {
    fn flush(&mut self) -> io::Result<()> {
        self.sink.write_all(&self.out)?;
        self.out.clear();
        Ok(())
    }

    /// `func.func public @main(%arg0: T, ...) -> R {` ... `}`; the shape
    /// was checked by [`main_function`].
    unsafe fn func(&mut self, func: MlirOperation, attrs: &FunctionAttributes) -> io::Result<()> {
        unsafe {
            let body = mlirRegionGetFirstBlock(mlirOperationGetRegion(func, 0));
            self.out.extend_from_slice(b"  func.func ");
            if let Some(visibility) = attrs.sym_visibility {
                self.out
                    .extend_from_slice(str_of(mlirStringAttrGetValue(visibility)));
                self.out.push(b' ');
            }
            self.out.push(b'@');
            self.out
                .extend_from_slice(str_of(mlirStringAttrGetValue(attrs.sym_name)));
            self.out.push(b'(');
            self.block_args(body);
            self.out.push(b')');
            let fty = mlirTypeAttrGetValue(attrs.function_type);
            let results = mlirFunctionTypeGetNumResults(fty);
            let result = |i| mlirFunctionTypeGetResult(fty, i);
            match results {
                0 => {}
                1 => {
                    self.out.extend_from_slice(b" -> ");
                    self.ty(result(0));
                }
                n => {
                    self.out.extend_from_slice(b" -> (");
                    self.types_list((0..n).map(result));
                    self.out.push(b')');
                }
            }
            self.out.extend_from_slice(b" {\n");
            let mut op = mlirBlockGetFirstOperation(body);
            while !op.ptr.is_null() {
                let next = mlirOperationGetNextInBlock(op);
                if next.ptr.is_null() {
                    self.func_return(op)?;
                } else {
                    self.op(op, 4)?;
                }
                if self.out.len() >= CHUNK {
                    self.flush()?;
                }
                op = next;
            }
            self.out.extend_from_slice(b"  }\n");
            Ok(())
        }
    }

    /// `return %a, %b : T, U`.
    unsafe fn func_return(&mut self, op: MlirOperation) -> io::Result<()> {
        unsafe {
            self.out.extend_from_slice(b"    return");
            let n = mlirOperationGetNumOperands(op);
            if n > 0 {
                self.out.push(b' ');
                self.operands(op)?;
                self.out.extend_from_slice(b" : ");
                self.types_list((0..n).map(|i| mlirValueGetType(mlirOperationGetOperand(op, i))));
            }
            self.out.push(b'\n');
            Ok(())
        }
    }

    /// One operation in MLIR's generic form:
    /// `%r = "name"(%a, %b) ({...}) {attr = ...} : (A, B) -> R`.
    unsafe fn op(&mut self, op: MlirOperation, indent: usize) -> io::Result<()> {
        unsafe {
            self.indent(indent);
            let nres = mlirOperationGetNumResults(op);
            if nres > 0 {
                let id = self.next_result;
                self.next_result += 1;
                for i in 0..nres {
                    let index = (nres > 1).then_some(i as u32);
                    let v = mlirOperationGetResult(op, i);
                    self.values
                        .insert(v.ptr as usize, Name::Result { id, index });
                }
                self.out.push(b'%');
                push_u32(&mut self.out, id);
                if nres > 1 {
                    self.out.push(b':');
                    push_u32(&mut self.out, nres as u32);
                }
                self.out.extend_from_slice(b" = ");
            }
            self.out.push(b'"');
            self.out.extend_from_slice(op_name(op));
            self.out.extend_from_slice(b"\"(");
            self.operands(op)?;
            self.out.push(b')');
            let nregions = mlirOperationGetNumRegions(op);
            if nregions > 0 {
                self.out.extend_from_slice(b" (");
                for r in 0..nregions {
                    self.comma(r as usize);
                    self.region(op, r, indent)?;
                }
                self.out.push(b')');
            }
            let nattrs = mlirOperationGetNumDiscardableAttributes(op);
            if nattrs > 0 {
                self.out.extend_from_slice(b" {");
                for i in 0..nattrs {
                    self.comma(i as usize);
                    let a = mlirOperationGetDiscardableAttribute(op, i);
                    self.out
                        .extend_from_slice(str_of(mlirIdentifierStr(a.name)));
                    self.out.extend_from_slice(b" = ");
                    self.attr(a.attribute);
                }
                self.out.push(b'}');
            }
            self.out.extend_from_slice(b" : (");
            self.types_list(
                (0..mlirOperationGetNumOperands(op))
                    .map(|i| mlirValueGetType(mlirOperationGetOperand(op, i))),
            );
            self.out.extend_from_slice(b") -> ");
            let result = |i| mlirValueGetType(mlirOperationGetResult(op, i));
            match nres {
                0 => self.out.extend_from_slice(b"()"),
                1 => self.ty(result(0)),
                _ => {
                    self.out.push(b'(');
                    self.types_list((0..nres).map(result));
                    self.out.push(b')');
                }
            }
            self.out.push(b'\n');
            Ok(())
        }
    }

    /// A single-block region: `{`, the block's arguments as `^bb0(...):`
    /// when it has any, its operations, `}`.
    unsafe fn region(&mut self, op: MlirOperation, r: isize, indent: usize) -> io::Result<()> {
        unsafe {
            let block = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
            self.out.extend_from_slice(b"{\n");
            if mlirBlockGetNumArguments(block) > 0 {
                self.indent(indent);
                self.out.extend_from_slice(b"^bb0(");
                self.block_args(block);
                self.out.extend_from_slice(b"):\n");
            }
            let mut inner = mlirBlockGetFirstOperation(block);
            while !inner.ptr.is_null() {
                self.op(inner, indent + 2)?;
                inner = mlirOperationGetNextInBlock(inner);
            }
            self.indent(indent);
            self.out.push(b'}');
            Ok(())
        }
    }

    /// `%argN: T, ...`, naming the block's arguments.
    unsafe fn block_args(&mut self, block: MlirBlock) {
        unsafe {
            for i in 0..mlirBlockGetNumArguments(block) {
                self.comma(i as usize);
                let v = mlirBlockGetArgument(block, i);
                let n = self.next_arg;
                self.next_arg += 1;
                self.values.insert(v.ptr as usize, Name::Arg(n));
                self.name(Name::Arg(n));
                self.out.extend_from_slice(b": ");
                self.ty(mlirValueGetType(v));
            }
        }
    }

    unsafe fn operands(&mut self, op: MlirOperation) -> io::Result<()> {
        unsafe {
            for i in 0..mlirOperationGetNumOperands(op) {
                self.comma(i as usize);
                self.value(mlirOperationGetOperand(op, i))?;
            }
            Ok(())
        }
    }

    fn value(&mut self, v: MlirValue) -> io::Result<()> {
        // Every operand is defined before its use: MLIR verified dominance.
        let Some(&name) = self.values.get(&(v.ptr as usize)) else {
            return Err(io::Error::other("a value is used before it is defined"));
        };
        self.name(name);
        Ok(())
    }

    fn name(&mut self, name: Name) {
        match name {
            Name::Result { id, index } => {
                self.out.push(b'%');
                push_u32(&mut self.out, id);
                if let Some(k) = index {
                    self.out.push(b'#');
                    push_u32(&mut self.out, k);
                }
            }
            Name::Arg(n) => {
                self.out.extend_from_slice(b"%arg");
                push_u32(&mut self.out, n);
            }
        }
    }

    fn types_list(&mut self, types: impl Iterator<Item = MlirType>) {
        for (i, t) in types.enumerate() {
            self.comma(i);
            self.ty(t);
        }
    }

    fn ty(&mut self, t: MlirType) {
        let text = self.types.entry(t.ptr as usize).or_insert_with(|| {
            // SAFETY: `t` belongs to the live context.
            unsafe { printed(|cb, data| mlirTypePrint(t, cb, data)) }.into_boxed_slice()
        });
        self.out.extend_from_slice(text);
    }

    fn attr(&mut self, a: MlirAttribute) {
        let text = self.attrs.entry(a.ptr as usize).or_insert_with(|| {
            // SAFETY: `a` belongs to the live context.
            unsafe { printed(|cb, data| mlirAttributePrint(a, cb, data)) }.into_boxed_slice()
        });
        self.out.extend_from_slice(text);
    }

    /// `, ` before every item of a list but the first.
    fn comma(&mut self, i: usize) {
        if i > 0 {
            self.out.extend_from_slice(b", ");
        }
    }

    fn indent(&mut self, n: usize) {
        self.out.resize(self.out.len() + n, b' ');
    }
}

/// The only block of region `r` of `op`.
unsafe fn single_block(op: MlirOperation, r: isize) -> Option<MlirBlock> {
    unsafe {
        if r >= mlirOperationGetNumRegions(op) {
            return None;
        }
        let block = mlirRegionGetFirstBlock(mlirOperationGetRegion(op, r));
        (!block.ptr.is_null() && mlirBlockGetNextInRegion(block).ptr.is_null()).then_some(block)
    }
}

unsafe fn op_name<'a>(op: MlirOperation) -> &'a [u8] {
    unsafe { str_of(mlirIdentifierStr(mlirOperationGetName(op))) }
}

/// A name MLIR prints without quotes in an attribute dictionary.
fn is_bare_identifier(s: &[u8]) -> bool {
    matches!(s.first(), Some(c) if c.is_ascii_alphabetic() || *c == b'_')
        && s.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'$' | b'.'))
}

/// The bytes of a string MLIR owns (identifiers and string attributes live
/// as long as the context).
unsafe fn str_of<'a>(s: MlirStringRef) -> &'a [u8] {
    if s.length == 0 {
        return &[];
    }
    unsafe { std::slice::from_raw_parts(s.data as *const u8, s.length) }
}

/// The text an MLIR print function writes through its callback.
unsafe fn printed(
    print: impl FnOnce(mlir_sys::MlirStringCallback, *mut std::ffi::c_void),
) -> Vec<u8> {
    let mut out: Vec<u8> = Vec::new();
    print(
        Some(append),
        &mut out as *mut Vec<u8> as *mut std::ffi::c_void,
    );
    out
}

/// The callback of MLIR's print functions: appends to the `Vec<u8>` that
/// `data` points to.
unsafe extern "C" fn append(s: MlirStringRef, data: *mut std::ffi::c_void) {
    // SAFETY: `data` is a `Vec<u8>` the caller lends for the call; MLIR
    // passes valid slices.
    unsafe {
        let out = &mut *(data as *mut Vec<u8>);
        out.extend_from_slice(str_of(s));
    }
}

/// The module printed by MLIR itself, which prints anything: generic form
/// for unregistered operations, no verification (the caller verified the
/// module before), no aliases or locations.
pub(super) fn mlir_text(module: &Module) -> Vec<u8> {
    let module = module.as_operation().to_raw();
    // SAFETY: the module is alive; the flags live for the call; the
    // callback only appends.
    unsafe {
        let flags = mlir_sys::mlirOpPrintingFlagsCreate();
        mlir_sys::mlirOpPrintingFlagsAssumeVerified(flags);
        let mut out =
            printed(|cb, data| mlir_sys::mlirOperationPrintWithFlags(module, flags, cb, data));
        mlir_sys::mlirOpPrintingFlagsDestroy(flags);
        out.push(b'\n');
        out
    }
}

/// Appends `n` in decimal.
fn push_u32(out: &mut Vec<u8>, mut n: u32) {
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}
