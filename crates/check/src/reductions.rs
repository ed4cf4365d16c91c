//! The reductions by one combining primitive (`reduce_*`, `reduce_window_*`,
//! `cum*`): which family each is, what combines and where it starts. One
//! table, which the checker's rules and both back ends read.

use crate::registry::Prim;

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

    /// The elementwise primitive that combines two values; `None` for
    /// [`Combiner::LogAddExp`], which no one primitive is.
    pub fn prim(self) -> Option<Prim> {
        Some(match self {
            Combiner::Add => Prim::Add,
            Combiner::Mul => Prim::Mul,
            Combiner::Max => Prim::Max,
            Combiner::Min => Prim::Min,
            Combiner::And => Prim::And,
            Combiner::Or => Prim::Or,
            Combiner::Xor => Prim::Xor,
            Combiner::LogAddExp => return None,
        })
    }

    /// The primitive's name: `logaddexp` for [`Combiner::LogAddExp`].
    pub fn primitive(self) -> &'static str {
        self.prim().map_or("logaddexp", Prim::name)
    }

    /// The combiner that is elementwise primitive `prim`.
    pub fn of_prim(prim: Prim) -> Option<Combiner> {
        Combiner::ALL.into_iter().find(|c| c.prim() == Some(prim))
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
pub const REDUCTIONS: &[(Prim, Along, Combiner)] = &[
    (Prim::ReduceSum, Along::Axes, Combiner::Add),
    (Prim::ReduceProd, Along::Axes, Combiner::Mul),
    (Prim::ReduceMax, Along::Axes, Combiner::Max),
    (Prim::ReduceMin, Along::Axes, Combiner::Min),
    (Prim::ReduceAnd, Along::Axes, Combiner::And),
    (Prim::ReduceOr, Along::Axes, Combiner::Or),
    (Prim::ReduceXor, Along::Axes, Combiner::Xor),
    (Prim::ReduceWindowSum, Along::Window, Combiner::Add),
    (Prim::ReduceWindowMax, Along::Window, Combiner::Max),
    (Prim::ReduceWindowMin, Along::Window, Combiner::Min),
    (Prim::Cumsum, Along::Cumulative, Combiner::Add),
    (Prim::Cumprod, Along::Cumulative, Combiner::Mul),
    (Prim::Cummax, Along::Cumulative, Combiner::Max),
    (Prim::Cummin, Along::Cumulative, Combiner::Min),
    (Prim::Cumlogsumexp, Along::Cumulative, Combiner::LogAddExp),
];

/// The reduction `primitive` is, if it is one.
pub fn reduction(primitive: Prim) -> Option<Reduction> {
    REDUCTIONS
        .iter()
        .find(|(p, _, _)| *p == primitive)
        .map(|&(_, along, combiner)| Reduction { along, combiner })
}
