//! Diagnostics: the one editor-neutral description of a problem in a jaxpr.
//! The CLI renders them (human and JSON) and the language server converts
//! them; neither adds meaning of its own.

use crate::TextRange;
use serde::Serialize;

#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, Serialize, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// The stable vocabulary of diagnostic kinds (see `shared/corpus/README.md`).
/// Each kind has a fixed code; codes and kind names never change meaning.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug, PartialOrd, Ord)]
pub enum DiagKind {
    Syntax,
    UndefinedVariable,
    DuplicateDefinition,
    ShapeMismatch,
    DtypeMismatch,
    ArityMismatch,
    InvalidParameter,
    DimensionScope,
    InconclusiveDimension,
    UnknownPrimitive,
    /// Two dimension variables that are provably equal through the call
    /// site, although the jaxpr names them differently (the Caveats case).
    AliasedDimension,
    /// The build has no lowering for this primitive (or this use of it).
    Unsupported,
    /// A PRNG key consumed twice: both uses draw the same random bits.
    KeyReuse,
    /// A constant index out of range of a gather, scatter or dynamic
    /// slice, which JAX clamps, fills or drops without a word.
    OutOfBoundsIndex,
    /// A 64-bit dtype requested where JAX computes in 32 bits (x64 off).
    DtypeSurprise,
}

impl DiagKind {
    pub const ALL: [DiagKind; 15] = [
        DiagKind::Syntax,
        DiagKind::UndefinedVariable,
        DiagKind::DuplicateDefinition,
        DiagKind::ShapeMismatch,
        DiagKind::DtypeMismatch,
        DiagKind::ArityMismatch,
        DiagKind::InvalidParameter,
        DiagKind::DimensionScope,
        DiagKind::InconclusiveDimension,
        DiagKind::UnknownPrimitive,
        DiagKind::AliasedDimension,
        DiagKind::Unsupported,
        DiagKind::KeyReuse,
        DiagKind::OutOfBoundsIndex,
        DiagKind::DtypeSurprise,
    ];

    pub fn name(self) -> &'static str {
        match self {
            DiagKind::Syntax => "syntax",
            DiagKind::UndefinedVariable => "undefined-variable",
            DiagKind::DuplicateDefinition => "duplicate-definition",
            DiagKind::ShapeMismatch => "shape-mismatch",
            DiagKind::DtypeMismatch => "dtype-mismatch",
            DiagKind::ArityMismatch => "arity-mismatch",
            DiagKind::InvalidParameter => "invalid-parameter",
            DiagKind::DimensionScope => "dimension-scope",
            DiagKind::InconclusiveDimension => "inconclusive-dimension",
            DiagKind::UnknownPrimitive => "unknown-primitive",
            DiagKind::AliasedDimension => "aliased-dimension",
            DiagKind::Unsupported => "unsupported",
            DiagKind::KeyReuse => "key-reuse",
            DiagKind::OutOfBoundsIndex => "out-of-bounds-index",
            DiagKind::DtypeSurprise => "dtype-surprise",
        }
    }

    pub fn code(self) -> &'static str {
        match self {
            DiagKind::Syntax => "J0001",
            DiagKind::UndefinedVariable => "J0002",
            DiagKind::DuplicateDefinition => "J0003",
            DiagKind::ShapeMismatch => "J0004",
            DiagKind::DtypeMismatch => "J0005",
            DiagKind::ArityMismatch => "J0006",
            DiagKind::InvalidParameter => "J0007",
            DiagKind::DimensionScope => "J0008",
            DiagKind::InconclusiveDimension => "J0009",
            DiagKind::UnknownPrimitive => "J0010",
            DiagKind::AliasedDimension => "J0011",
            DiagKind::Unsupported => "J0012",
            DiagKind::KeyReuse => "J0013",
            DiagKind::OutOfBoundsIndex => "J0014",
            DiagKind::DtypeSurprise => "J0015",
        }
    }

    pub fn from_name(name: &str) -> Option<DiagKind> {
        DiagKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// A secondary location that explains the primary one (where a dimension
/// variable was bound, the other branch, the call-site operand...).
#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Related {
    pub range: TextRange,
    pub message: String,
}

#[derive(Clone, PartialEq, Eq, Debug, Hash)]
pub struct Diagnostic {
    pub severity: Severity,
    pub kind: DiagKind,
    pub message: String,
    /// Primary range: the offending token.
    pub range: TextRange,
    pub related: Vec<Related>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(kind: DiagKind, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            kind,
            message: message.into(),
            range,
            related: Vec::new(),
            help: None,
        }
    }
    pub fn warning(kind: DiagKind, range: TextRange, message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            kind,
            message: message.into(),
            range,
            related: Vec::new(),
            help: None,
        }
    }
    pub fn with_related(mut self, range: TextRange, message: impl Into<String>) -> Self {
        self.related.push(Related {
            range,
            message: message.into(),
        });
        self
    }
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
    pub fn shifted(mut self, by: u32) -> Self {
        self.range = self.range.shifted(by);
        for r in &mut self.related {
            r.range = r.range.shifted(by);
        }
        self
    }
}
