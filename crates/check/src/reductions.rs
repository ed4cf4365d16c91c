//! The reductions by one combining primitive (`reduce_*`, `reduce_window_*`,
//! `cum*`): which family each is, what combines and where it starts. One
//! table, which the checker's rules and both back ends read.

/// A value a reduction starts from (the identity of its combining
/// primitive), and the other constants the back ends name so.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Init {
    Zero,
    One,
    /// The lowest value (`-inf`, the minimum integer, `False`).
    Lowest,
    /// The highest value (`inf`, the maximum integer, `True`).
    Highest,
    /// Every bit set (`-1`, the maximum unsigned integer, `True`): `and`'s
    /// identity, as JAX's `_get_bitwise_and_identity`.
    AllOnes,
}

/// The binary primitive a reduction combines with.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Combiner {
    Add,
    Mul,
    Max,
    Min,
    And,
    Or,
    Xor,
    /// `cumlogsumexp`: JAX's `reduce_window` of `logaddexp`.
    LogAddExp,
}

impl Combiner {
    const ALL: [Combiner; 8] = [
        Combiner::Add,
        Combiner::Mul,
        Combiner::Max,
        Combiner::Min,
        Combiner::And,
        Combiner::Or,
        Combiner::Xor,
        Combiner::LogAddExp,
    ];

    /// The jaxpr primitive that combines two values.
    pub fn primitive(self) -> &'static str {
        match self {
            Combiner::Add => "add",
            Combiner::Mul => "mul",
            Combiner::Max => "max",
            Combiner::Min => "min",
            Combiner::And => "and",
            Combiner::Or => "or",
            Combiner::Xor => "xor",
            Combiner::LogAddExp => "logaddexp",
        }
    }

    /// The combiner whose primitive is `name`.
    pub fn of_primitive(name: &str) -> Option<Combiner> {
        Combiner::ALL.into_iter().find(|c| c.primitive() == name)
    }

    /// Its identity: where a reduction with it starts.
    pub fn identity(self) -> Init {
        match self {
            Combiner::Add | Combiner::Or | Combiner::Xor => Init::Zero,
            Combiner::Mul => Init::One,
            Combiner::Max | Combiner::LogAddExp => Init::Lowest,
            Combiner::Min => Init::Highest,
            Combiner::And => Init::AllOnes,
        }
    }
}

/// What a reduction reduces over.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Along {
    /// `reduce_*[axes=...]`: the result drops the axes.
    Axes,
    /// `reduce_window_*`: a window per dimension.
    Window,
    /// `cum*[axis=... reverse=...]`: the same type as the operand.
    Cumulative,
}

/// A reduction primitive: its family and its combiner.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct Reduction {
    pub along: Along,
    pub combiner: Combiner,
}

/// Every reduction by one combining primitive.
pub const REDUCTIONS: &[(&str, Along, Combiner)] = &[
    ("reduce_sum", Along::Axes, Combiner::Add),
    ("reduce_prod", Along::Axes, Combiner::Mul),
    ("reduce_max", Along::Axes, Combiner::Max),
    ("reduce_min", Along::Axes, Combiner::Min),
    ("reduce_and", Along::Axes, Combiner::And),
    ("reduce_or", Along::Axes, Combiner::Or),
    ("reduce_xor", Along::Axes, Combiner::Xor),
    ("reduce_window_sum", Along::Window, Combiner::Add),
    ("reduce_window_max", Along::Window, Combiner::Max),
    ("reduce_window_min", Along::Window, Combiner::Min),
    ("cumsum", Along::Cumulative, Combiner::Add),
    ("cumprod", Along::Cumulative, Combiner::Mul),
    ("cummax", Along::Cumulative, Combiner::Max),
    ("cummin", Along::Cumulative, Combiner::Min),
    ("cumlogsumexp", Along::Cumulative, Combiner::LogAddExp),
];

/// The reduction `primitive` is, if it is one.
pub fn reduction(primitive: &str) -> Option<Reduction> {
    REDUCTIONS
        .iter()
        .find(|(p, _, _)| *p == primitive)
        .map(|&(_, along, combiner)| Reduction { along, combiner })
}
