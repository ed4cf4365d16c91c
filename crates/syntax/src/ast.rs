//! The syntax tree of a printed jaxpr file. It records what the text says and
//! where (every node has its byte range) and nothing about meaning: names are
//! not resolved and types are not interpreted here.

use super::TextRange;
pub use smol_str::SmolStr;

/// A name as written, with its range.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Name {
    pub text: SmolStr,
    pub range: TextRange,
}

/// A whole file: zero or more `let NAME = { lambda ... } in` items, then the main jaxpr.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct SourceFile {
    pub lets: Vec<LetJaxpr>,
    pub main: Option<Jaxpr>,
}

/// `let NAME = { lambda ... } in`: a jaxpr shared by several equations (`jaxpr=NAME`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct LetJaxpr {
    pub name: Name,
    pub jaxpr: Jaxpr,
    pub range: TextRange,
}

/// `{ lambda CONSTVARS ; INVARS . let EQNS in OUTS }`
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Jaxpr {
    /// From `{` to `}`.
    pub range: TextRange,
    /// The `lambda` keyword (hover and outline anchor).
    pub lambda_range: TextRange,
    pub constvars: Box<[Binder]>,
    pub invars: Box<[Binder]>,
    pub eqns: Box<[Eqn]>,
    pub outvars: Box<[Atom]>,
    /// The `in` keyword before the outputs, when present.
    pub in_range: Option<TextRange>,
    /// A parameter value's own `let` jaxprs, printed before it
    /// (`transpose_solve=let _lu_solve = { ... } in { ... }`); its
    /// equations name them. Always empty for a file's main jaxpr (the
    /// file's `let`s are in [`SourceFile::lets`]).
    pub lets: Box<[LetJaxpr]>,
}

/// `name:type`, or `_:type` for a dropped result.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Binder {
    pub name: Name,
    pub ty: Option<TypeExpr>,
    pub range: TextRange,
}

impl Binder {
    pub fn is_dropped(&self) -> bool {
        &*self.name.text == "_"
    }
}

/// `f32[a,2*b]`, `key<fry>[]`, `bool[]`; or a non-array abstract value
/// written as a call, `AbstractQreg()`, `AbstractObs(num_qubits=2, ...)`
/// (Catalyst), whose name is then in `dtype` and whose keyword arguments
/// are in `args`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct TypeExpr {
    pub dtype: Name,
    pub dims: Box<[Expr]>,
    /// What a call form, a reference or mesh axes add (boxed: nearly every
    /// type has none, and a large file holds tens of thousands of types).
    pub extra: Option<Box<TypeExtra>>,
    pub range: TextRange,
}

/// The parts of a type beyond its dtype and dimensions; a type has at most one.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum TypeExtra {
    /// The call form's keyword arguments (no dimensions then).
    Call(Box<[CallArg]>),
    /// A mutable reference, `Ref{f32[3]}` or `Ref<vmem>{f32[8,16]}` (JAX's
    /// `AbstractRef`): `dtype` is `Ref` or `Ref<space>` and this is the
    /// type in braces (no dimensions of its own then).
    Ref(TypeExpr),
    /// The mesh axes JAX prints with a value inside `shard_map`: `{V:x}`
    /// after the brackets.
    Axes(MeshAxes),
}

/// What a type says about the manual mesh axes of a multi-device program:
/// the axes the value varies over (`f32[4]{V:x}`, `{V:(x,y)}` from jax 0.6,
/// `{x,y}` in 0.7; the named shape `f32[4;x:8]` of jax 0.4), and those it is
/// unreduced (`U:`) or reduced (`R:`) over. Each name keeps its range.
#[derive(Clone, PartialEq, Eq, Hash, Debug, Default)]
pub struct MeshAxes {
    pub varying: Box<[AxisName]>,
    pub unreduced: Box<[AxisName]>,
    pub reduced: Box<[AxisName]>,
    /// From the first `{` (or the `;` of a named shape) to the last `}`.
    pub range: TextRange,
}

/// A mesh axis in a type; `size` only in jax 0.4's named shapes (`x:8`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct AxisName {
    pub name: Name,
    pub size: Option<Expr>,
}

impl TypeExpr {
    /// An array type `dtype[dims]`, rather than a non-array abstract value
    /// or a reference.
    pub fn is_array(&self) -> bool {
        self.args().is_none() && self.of().is_none()
    }

    /// `Some` for the call form.
    pub fn args(&self) -> Option<&[CallArg]> {
        match self.extra.as_deref() {
            Some(TypeExtra::Call(args)) => Some(args),
            _ => None,
        }
    }

    /// The type a reference holds.
    pub fn of(&self) -> Option<&TypeExpr> {
        match self.extra.as_deref() {
            Some(TypeExtra::Ref(of)) => Some(of),
            _ => None,
        }
    }

    /// The mesh axes written with the type.
    pub fn axes(&self) -> Option<&MeshAxes> {
        match self.extra.as_deref() {
            Some(TypeExtra::Axes(axes)) => Some(axes),
            _ => None,
        }
    }
}

/// `outs = prim[params] args   # comments`
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Eqn {
    pub outs: Box<[Binder]>,
    pub primitive: Name,
    pub params: Box<[Param]>,
    /// The `[ ... ]` around the parameters, when present.
    pub params_range: Option<TextRange>,
    pub args: Box<[Atom]>,
    /// Comments after the equation: source info (`# file:line:col (fn)`) and name stack (`# [...]`).
    pub comments: Box<[Comment]>,
    pub range: TextRange,
    /// A syntax error (reported) cut the equation short: `outs` holds the
    /// binders read before it (some without types), the primitive name is
    /// empty, and there are no parameters or operands. Its results are
    /// still bound, so that one error does not make every later use of
    /// them undefined too.
    pub incomplete: bool,
    /// A state statement (`g:f32[8] <- d[...]`, `y:f32[8], r[i,:] <- r[i,:], v`,
    /// `r[0,:] <- v`, `r[...] += v`): how JAX's printer wrote the equation
    /// of `get`/`swap`/`addupdate` (and Pallas's `masked_load`/`masked_swap`).
    /// The equation then reads as `outs = primitive ref value? index-vars... mask? other?`:
    /// `primitive` is the primitive's name with the range of the arrow.
    pub state: Option<Box<StateAccess>>,
}

/// How a state statement was written (see [`Eqn::state`]).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct StateAccess {
    pub kind: StateKind,
    /// The reference and its indexers, on the left of a store and on the
    /// right of a load (the first one of a swap).
    pub place: RefPlace,
    /// `<-` or `+=`.
    pub arrow: TextRange,
    /// The stored value (a swap, a store, an add-update).
    pub value: Option<Atom>,
    /// Pallas's `mask=m` and `other=o`.
    pub mask: Option<Atom>,
    pub other: Option<Atom>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum StateKind {
    /// `y:T <- r[idx]`
    Load,
    /// `y:T, r[idx] <- r[idx], v`
    Swap,
    /// `r[idx] <- v` (a swap whose old value is dropped)
    Store,
    /// `r[idx] += v`
    AddUpdate,
}

/// `r[...]`, `r[b,:]`, `r[e:e+2,:]`, `r[0][1:3]`, `r{bitcast(i32)}[...]`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct RefPlace {
    pub var: Name,
    /// Empty for `[...]`, the whole reference.
    pub transforms: Box<[RefTransform]>,
    pub range: TextRange,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum RefTransform {
    /// `[i,a:b,:]`: one indexer per dimension (JAX's `NDIndexer`).
    Index(Box<[Indexer]>, TextRange),
    /// `{bitcast(i32)}`, `{reshape([2, 4])}`, `{transpose([1, 0])}`: kept as text.
    Other(Box<str>, TextRange),
}

/// One dimension of an `NDIndexer` as JAX prints it (`_pp_slice`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Indexer {
    /// A scalar index (a variable or an integer): the dimension is dropped.
    At(Atom),
    /// `:`, `a:`, `:b`, `a:b` (integers: from a to b), `v:v+n` and `a:a+v`
    /// (a start and a size, `plus`); JAX prints no stride.
    Slice {
        start: Option<Atom>,
        stop: Option<Atom>,
        /// `stop` is a size (`v:v+n`) rather than an end.
        plus: bool,
        range: TextRange,
    },
}

impl Eqn {
    pub fn param(&self, name: &str) -> Option<&Param> {
        self.params.iter().find(|p| &*p.name.text == name)
    }

    /// The source-info comment, `file.py:12:8 (loss)` as
    /// `pretty_print(source_info=True)` prints it after the `=` (JAX
    /// prints none for an equation without results, and an empty one when
    /// it found no user frame).
    pub fn source_info(&self) -> Option<&str> {
        self.comments
            .iter()
            .map(|c| &*c.text)
            .find(|t| !t.is_empty() && !t.starts_with('['))
    }

    /// The name stack, inside the `[...]` comment that
    /// `pretty_print(name_stack=True)` prints after the primitive
    /// (`transpose(jvp(dense))`, `jvp()/loss`; empty for `[]`). It is
    /// relative to the jaxpr the equation is in.
    pub fn name_stack(&self) -> Option<&str> {
        self.comments
            .iter()
            .find_map(|c| c.text.strip_prefix('[').and_then(|t| t.strip_suffix(']')))
    }
}

/// The scopes of a name stack, outermost first: JAX joins them with `/`
/// (`NameStack.__str__`); a transform wraps the scope it applies to
/// (`transpose(jvp(dense))`), so a `/` inside parentheses is not a
/// separator.
pub fn name_stack_scopes(stack: &str) -> impl Iterator<Item = &str> {
    let mut depth = 0i32;
    stack
        .split(move |c| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            c == '/' && depth <= 0
        })
        .filter(|s| !s.is_empty())
}

/// The Python function of a source-info comment: `loss` of
/// `model.py:12:8 (loss)` (JAX's `_summarize_frame`; the column is left
/// out when it is 0). `None` for `unknown` or a comment without one.
pub fn source_function(source_info: &str) -> Option<&str> {
    let open = source_info.rfind(" (")?;
    source_info[open + 2..]
        .strip_suffix(')')
        .filter(|f| !f.is_empty())
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Comment {
    /// Text after `#`, trimmed.
    pub text: Box<str>,
    pub range: TextRange,
}

/// An operand or output: a variable or a literal.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum Atom {
    Var(Name),
    /// `1.0:f32[]`, `-inf:f32[]`, `True:bool[]`, `(b'',):float0[]`, or
    /// untyped as JAX up to 0.5 prints them: `1.0`, `-inf`, `(b'',)`
    /// (bare `inf` and `nan` are names: see [`Atom::is_bare_inf_or_nan`]).
    /// Boxed: operands are mostly variables.
    Lit(Box<Literal>),
}

impl Atom {
    /// `_` as an operand or an output. JAX prints `_` for a variable it
    /// drops (a `DropVar`) and, from 0.6 on, for every result of the
    /// printed jaxpr's equations that nothing there uses; a nested jaxpr
    /// of `jit` then takes the names of the call's operands and results,
    /// `_` included, so its `_` can be used (`b = mul _ _`, `in (_, b, _)`)
    /// and two uses of `_` may be two different values. It names no
    /// binding: its value has the type its context gives.
    pub fn is_dropped(&self) -> bool {
        matches!(self, Atom::Var(n) if &*n.text == "_")
    }

    /// `inf` or `nan` without a type. JAX up to 0.5 prints the literals
    /// infinity and NaN so (`add c nan`, `] b a inf`); it also names its
    /// 5752nd variable `inf` (and its 8802nd `nan`), printed bare in every
    /// version. The parser reads both as the name (`Atom::Var`): an `inf`
    /// or `nan` that no binder in scope defines is the untyped literal,
    /// which only name resolution can tell.
    pub fn is_bare_inf_or_nan(&self) -> bool {
        matches!(self, Atom::Var(n) if matches!(&*n.text, "inf" | "nan"))
    }

    pub fn range(&self) -> TextRange {
        match self {
            Atom::Var(n) => n.range,
            Atom::Lit(l) => l.range,
        }
    }
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Literal {
    /// The value as written (`1.0`, `-inf`, `True`, `0`).
    pub value: Box<str>,
    pub ty: Option<TypeExpr>,
    pub range: TextRange,
}

/// `name=value` inside `prim[...]`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Param {
    pub name: Name,
    pub value: Expr,
    pub range: TextRange,
}

/// Expressions: parameter values and the dimensions of types share one
/// grammar (`(a, 1)`, `2*b`, `GatherDimensionNumbers(offset_dims=(0,), ...)`,
/// `np.int64(0)`, `{ lambda ... }`).
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Expr {
    pub kind: ExprKind,
    pub range: TextRange,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub enum ExprKind {
    Int(i64),
    /// A float or an integer too large for i64, as written.
    Number(Box<str>),
    /// A quoted string (without its quotes), or a value kept as its text:
    /// an opaque repr `<function f at 0x...>`, a dict, a file path, and any
    /// value JAX printed with `str()` that does not read as an expression
    /// (`msg=Nonconstant batch. ...`, `ctx_mesh=Mesh('x': 1, ...)`).
    Str(Box<str>),
    /// `a`, `None`, `True`, `float32`, `GatherScatterMode.FILL_OR_DROP` (dotted path).
    Path(Box<str>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `b^2`: a symbolic dimension to a constant power.
    Pow(Box<Expr>, u32),
    /// `16@x` in a type: a dimension sharded over mesh axis `x`.
    Sharded(Box<Expr>, Box<Expr>),
    /// `f(args, key=value)`: named tuples, `np.int64(0)`, `floordiv(a, 2)`, `InDBIdx(val=0)`.
    /// Boxed: calls are rare, and expressions (every dimension of every type) are many.
    Call(Box<Call>),
    Tuple(Box<[Expr]>),
    List(Box<[Expr]>),
    Jaxpr(Box<Jaxpr>),
    /// A de Bruijn index into a signature, `DBIdx(val=0)`, `InDBIdx(val=1)`,
    /// `OutDBIdx(0)` (Catalyst's dynamic shapes): a dimension that refers to
    /// an input or an output by position.
    DbIdx(DbIdxKind, u32),
    /// Text the parser could not read (already reported).
    Error,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum DbIdxKind {
    /// `DBIdx`: an input of the same signature.
    In,
    /// `InDBIdx`: an input (an operand, at an equation).
    InOfCall,
    /// `OutDBIdx`: an output (a result, at an equation).
    Out,
}

impl DbIdxKind {
    pub fn from_name(name: &str) -> Option<DbIdxKind> {
        match name {
            "DBIdx" => Some(DbIdxKind::In),
            "InDBIdx" => Some(DbIdxKind::InOfCall),
            "OutDBIdx" => Some(DbIdxKind::Out),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            DbIdxKind::In => "DBIdx",
            DbIdxKind::InOfCall => "InDBIdx",
            DbIdxKind::Out => "OutDBIdx",
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    FloorDiv,
    Mod,
}

/// `callee(args)`.
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct Call {
    pub callee: Box<str>,
    pub callee_range: TextRange,
    pub args: Box<[CallArg]>,
}

#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct CallArg {
    pub name: Option<Name>,
    pub value: Expr,
}

impl Expr {
    pub fn as_int(&self) -> Option<i64> {
        match &self.kind {
            ExprKind::Int(i) => Some(*i),
            ExprKind::Neg(e) => e.as_int().and_then(|i| i.checked_neg()),
            // `np.int64(0)` and friends
            ExprKind::Call(c) if c.callee.starts_with("np.") && c.args.len() == 1 => {
                c.args[0].value.as_int()
            }
            _ => None,
        }
    }
    pub fn as_path(&self) -> Option<&str> {
        match &self.kind {
            ExprKind::Path(p) => Some(p),
            _ => None,
        }
    }
    pub fn is_none(&self) -> bool {
        self.as_path() == Some("None")
    }
    pub fn as_bool(&self) -> Option<bool> {
        match self.as_path()? {
            "True" => Some(true),
            "False" => Some(false),
            _ => None,
        }
    }
    /// Elements of a tuple or list.
    pub fn as_seq(&self) -> Option<&[Expr]> {
        match &self.kind {
            ExprKind::Tuple(v) | ExprKind::List(v) => Some(v),
            _ => None,
        }
    }
    /// A tuple/list of integers, e.g. `axes=(0, 1)`.
    pub fn as_int_seq(&self) -> Option<Vec<i64>> {
        self.as_seq()?.iter().map(Expr::as_int).collect()
    }
    /// A keyword argument of a call expression (named tuples).
    pub fn field(&self, name: &str) -> Option<&Expr> {
        match &self.kind {
            ExprKind::Call(c) => c
                .args
                .iter()
                .find(|a| a.name.as_ref().is_some_and(|n| &*n.text == name))
                .map(|a| &a.value),
            _ => None,
        }
    }
}

/// Every equation of the file, nested ones included, in text order of their jaxprs.
pub fn each_eqn(file: &SourceFile) -> impl Iterator<Item = &Eqn> {
    fn jaxpr<'a>(j: &'a Jaxpr, out: &mut Vec<&'a Eqn>) {
        for l in &j.lets {
            jaxpr(&l.jaxpr, out);
        }
        for e in &j.eqns {
            out.push(e);
            for p in &e.params {
                expr(&p.value, out);
            }
        }
    }
    fn expr<'a>(x: &'a Expr, out: &mut Vec<&'a Eqn>) {
        match &x.kind {
            ExprKind::Jaxpr(j) => jaxpr(j, out),
            ExprKind::Tuple(xs) | ExprKind::List(xs) => xs.iter().for_each(|x| expr(x, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for j in file.lets.iter().map(|l| &l.jaxpr).chain(&file.main) {
        jaxpr(j, &mut out);
    }
    out.into_iter()
}
