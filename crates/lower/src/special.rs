//! Special functions as the elementwise arithmetic both back ends already
//! have: each is written once here, over [`Elementwise`], and each back
//! end supplies the operations (StableHLO operations on tensors, LLVM
//! instructions and libm calls on one element). The algorithms and
//! coefficients are XLA's and JAX's own (Cephes' Chebyshev series for
//! `bessel_i0e` as JAX's `_i0e_impl32/64` and `bessel_i1e` as StableHLO's
//! CHLO decomposition, Giles' approximation for `erf_inv` and Lanczos'
//! for `digamma` as XLA's `math.cc`), so the results are JAX's up to the
//! rounding of the libm functions.
//!
//! The working precision is the caller's: f64 for `f64`, f32 otherwise
//! (XLA upcasts `f16` and `bf16` to f32 for each of these functions).

use crate::LowerResult;
use jaxpr_check::registry::Prim;

#[derive(Clone, Copy, Debug)]
pub enum Binary {
    Add,
    Sub,
    Mul,
    Div,
    /// The larger, NaN if either is.
    Max,
}

#[derive(Clone, Copy, Debug)]
pub enum Unary {
    Neg,
    Abs,
    Sqrt,
    Exp,
    Log1p,
    Floor,
    Sin,
    Cos,
    /// -1, 0 or 1 (NaN for NaN, signed zero for zero).
    Sign,
}

#[derive(Clone, Copy, Debug)]
pub enum Compare {
    Lt,
    Le,
    Eq,
    Gt,
    /// Not equal, or unordered (true when either is NaN).
    Ne,
}

/// Elementwise operations on values of one float type (the working
/// precision) and on predicates of that shape.
pub trait Elementwise {
    type Value: Copy;
    type Predicate: Copy;
    /// `x` in the working precision, shaped like the operands.
    fn constant(&self, x: f64) -> LowerResult<Self::Value>;
    fn binary(&self, op: Binary, x: Self::Value, y: Self::Value) -> LowerResult<Self::Value>;
    fn unary(&self, op: Unary, x: Self::Value) -> LowerResult<Self::Value>;
    fn compare(&self, op: Compare, x: Self::Value, y: Self::Value) -> LowerResult<Self::Predicate>;
    fn and(&self, p: Self::Predicate, q: Self::Predicate) -> LowerResult<Self::Predicate>;
    fn select(
        &self,
        p: Self::Predicate,
        t: Self::Value,
        f: Self::Value,
    ) -> LowerResult<Self::Value>;
}

/// The unary special functions written here.
pub const UNARY: &[Prim] = &[
    Prim::BesselI0e,
    Prim::BesselI1e,
    Prim::ErfInv,
    Prim::Digamma,
];

/// `prim` (one of [`UNARY`]) of `x`; `wide`: the working precision is f64.
pub fn unary<E: Elementwise>(e: &E, prim: Prim, x: E::Value, wide: bool) -> LowerResult<E::Value> {
    let f = Shorthands(e);
    match prim {
        Prim::BesselI0e => f.bessel_i0e(x, wide),
        Prim::BesselI1e => f.bessel_i1e(x, wide),
        Prim::ErfInv if wide => f.erf_inv64(x),
        Prim::ErfInv => f.erf_inv32(x),
        _ => f.digamma(x),
    }
}

/// `name` of `x` and `y`: `logaddexp`, as JAX's
/// `lax.logaddexp` (`cumlogsumexp`'s combining function):
/// `max + log1p(exp(-|x - y|))`, or `x + y` where `x - y` is NaN (NaNs,
/// or infinities of one sign).
pub fn logaddexp<E: Elementwise>(e: &E, x: E::Value, y: E::Value) -> LowerResult<E::Value> {
    let f = Shorthands(e);
    let max = e.binary(Binary::Max, x, y)?;
    let delta = f.sub(x, y)?;
    let nan = f.cmp(Compare::Ne, delta, delta)?;
    let tail = f.un(
        Unary::Log1p,
        f.un(Unary::Exp, f.un(Unary::Neg, f.un(Unary::Abs, delta)?)?)?,
    )?;
    f.select(nan, f.add(x, y)?, f.add(max, tail)?)
}

/// Shorthands over an [`Elementwise`].
struct Shorthands<'e, E>(&'e E);

impl<E: Elementwise> Shorthands<'_, E> {
    fn c(&self, x: f64) -> LowerResult<E::Value> {
        self.0.constant(x)
    }
    fn add(&self, x: E::Value, y: E::Value) -> LowerResult<E::Value> {
        self.0.binary(Binary::Add, x, y)
    }
    fn sub(&self, x: E::Value, y: E::Value) -> LowerResult<E::Value> {
        self.0.binary(Binary::Sub, x, y)
    }
    fn mul(&self, x: E::Value, y: E::Value) -> LowerResult<E::Value> {
        self.0.binary(Binary::Mul, x, y)
    }
    fn div(&self, x: E::Value, y: E::Value) -> LowerResult<E::Value> {
        self.0.binary(Binary::Div, x, y)
    }
    fn un(&self, op: Unary, x: E::Value) -> LowerResult<E::Value> {
        self.0.unary(op, x)
    }
    fn cmp(&self, op: Compare, x: E::Value, y: E::Value) -> LowerResult<E::Predicate> {
        self.0.compare(op, x, y)
    }
    fn select(&self, p: E::Predicate, t: E::Value, f: E::Value) -> LowerResult<E::Value> {
        self.0.select(p, t, f)
    }

    /// Clenshaw's recurrence of a Chebyshev series (coefficients from the
    /// highest order), as XLA's and JAX's `evaluate_chebyshev_polynomial`.
    fn chebyshev(&self, x: E::Value, coefficients: &[f64]) -> LowerResult<E::Value> {
        let zero = self.c(0.0)?;
        let (mut b0, mut b1, mut b2) = (zero, zero, zero);
        for &k in coefficients {
            b2 = b1;
            b1 = b0;
            b0 = self.add(self.sub(self.mul(x, b1)?, b2)?, self.c(k)?)?;
        }
        self.mul(self.c(0.5)?, self.sub(b0, b2)?)
    }

    /// `select(|x| <= 8, A(|x|/2 - 2) * scale, B(32/|x| - 2) / sqrt|x| * scale)`:
    /// the shape of both Bessel functions (`scale` is 1 for i0e, |x| for i1e's
    /// small branch).
    fn bessel(&self, x: E::Value, a: &[f64], b: &[f64], order_one: bool) -> LowerResult<E::Value> {
        let z = self.un(Unary::Abs, x)?;
        let two = self.c(2.0)?;
        let mut small = self.chebyshev(self.sub(self.mul(self.c(0.5)?, z)?, two)?, a)?;
        if order_one {
            small = self.mul(z, small)?;
        }
        let large = self.chebyshev(self.sub(self.div(self.c(32.0)?, z)?, two)?, b)?;
        let large = self.div(large, self.un(Unary::Sqrt, z)?)?;
        let le8 = self.cmp(Compare::Le, z, self.c(8.0)?)?;
        let r = self.select(le8, small, large)?;
        if order_one {
            self.mul(self.un(Unary::Sign, x)?, r)
        } else {
            Ok(r)
        }
    }

    fn bessel_i0e(&self, x: E::Value, wide: bool) -> LowerResult<E::Value> {
        if wide {
            self.bessel(x, I0E_A64, I0E_B64, false)
        } else {
            self.bessel(
                x,
                &I0E_A64[I0E_A64.len() - 18..],
                &I0E_B64[I0E_B64.len() - 7..],
                false,
            )
        }
    }

    fn bessel_i1e(&self, x: E::Value, wide: bool) -> LowerResult<E::Value> {
        if wide {
            self.bessel(x, I1E_A64, I1E_B64, true)
        } else {
            self.bessel(
                x,
                &I1E_A64[I1E_A64.len() - 17..],
                &I1E_B64[I1E_B64.len() - 7..],
                true,
            )
        }
    }

    /// `erfinv(±1) = ±inf`; elsewhere `p * x`.
    fn erf_inv_edges(&self, x: E::Value, p: E::Value) -> LowerResult<E::Value> {
        let one = self.cmp(Compare::Eq, self.un(Unary::Abs, x)?, self.c(1.0)?)?;
        self.select(one, self.mul(x, self.c(f64::INFINITY)?)?, self.mul(p, x)?)
    }

    /// `w = -log1p(-x^2)`.
    fn erf_inv_w(&self, x: E::Value) -> LowerResult<E::Value> {
        let w = self.un(Unary::Log1p, self.un(Unary::Neg, self.mul(x, x)?)?)?;
        self.un(Unary::Neg, w)
    }

    fn erf_inv32(&self, x: E::Value) -> LowerResult<E::Value> {
        let w = self.erf_inv_w(x)?;
        let lt = self.cmp(Compare::Lt, w, self.c(5.0)?)?;
        let w = self.select(
            lt,
            self.sub(w, self.c(2.5)?)?,
            self.sub(self.un(Unary::Sqrt, w)?, self.c(3.0)?)?,
        )?;
        let coefficient =
            |i: usize| self.select(lt, self.c(ERF_INV32_LT5[i])?, self.c(ERF_INV32_GE5[i])?);
        let mut p = coefficient(0)?;
        for i in 1..ERF_INV32_LT5.len() {
            p = self.add(coefficient(i)?, self.mul(p, w)?)?;
        }
        self.erf_inv_edges(x, p)
    }

    fn erf_inv64(&self, x: E::Value) -> LowerResult<E::Value> {
        let w = self.erf_inv_w(x)?;
        let lt_6_25 = self.cmp(Compare::Lt, w, self.c(6.25)?)?;
        let lt_16 = self.cmp(Compare::Lt, w, self.c(16.0)?)?;
        let coefficient = |i: usize| -> LowerResult<E::Value> {
            let mut c = self.c(ERF_INV64_LT6_25[i])?;
            if i < 19 {
                c = self.select(lt_6_25, c, self.c(ERF_INV64_LT16[i])?)?;
            }
            if i < 17 {
                c = self.select(lt_16, c, self.c(ERF_INV64_GE16[i])?)?;
            }
            Ok(c)
        };
        let shift = self.select(lt_16, self.c(3.25)?, self.c(5.0)?)?;
        let w = self.select(
            lt_6_25,
            self.sub(w, self.c(3.125)?)?,
            self.sub(self.un(Unary::Sqrt, w)?, shift)?,
        )?;
        let mut p = coefficient(0)?;
        for i in 1..17 {
            p = self.add(coefficient(i)?, self.mul(p, w)?)?;
        }
        for i in 17..19 {
            p = self.select(lt_16, self.add(coefficient(i)?, self.mul(p, w)?)?, p)?;
        }
        for i in 19..23 {
            p = self.select(lt_6_25, self.add(coefficient(i)?, self.mul(p, w)?)?, p)?;
        }
        self.erf_inv_edges(x, p)
    }

    fn digamma(&self, input: E::Value) -> LowerResult<E::Value> {
        let zero = self.c(0.0)?;
        let one = self.c(1.0)?;
        let half = self.c(0.5)?;
        let pi = self.c(std::f64::consts::PI)?;
        // digamma(x) = digamma(1 - x) - pi * cot(pi * x) below 0.5.
        let reflect = self.cmp(Compare::Lt, input, half)?;
        let z = self.select(reflect, self.un(Unary::Neg, input)?, self.sub(input, one)?)?;
        let mut num = zero;
        let mut denom = self.c(LANCZOS_BASE)?;
        for (i, &k) in LANCZOS.iter().enumerate() {
            let zi = self.add(self.add(z, self.c(i as f64)?)?, one)?;
            let k = self.c(k)?;
            num = self.sub(num, self.div(k, self.mul(zi, zi)?)?)?;
            denom = self.add(denom, self.div(k, zi)?)?;
        }
        let t = self.add(self.c(LANCZOS_GAMMA + 0.5)?, z)?;
        let log_t = self.add(
            self.c((LANCZOS_GAMMA + 0.5).ln())?,
            self.un(Unary::Log1p, self.div(z, self.c(LANCZOS_GAMMA + 0.5)?)?)?,
        )?;
        let y = self.sub(
            self.add(log_t, self.div(num, denom)?)?,
            self.div(self.c(LANCZOS_GAMMA)?, t)?,
        )?;
        let floor_half = self.un(Unary::Floor, self.add(input, half)?)?;
        let reduced = self.add(input, self.un(Unary::Abs, floor_half)?)?;
        let angle = self.mul(pi, reduced)?;
        let cot = self.div(self.un(Unary::Cos, angle)?, self.un(Unary::Sin, angle)?)?;
        let reflection = self.sub(y, self.mul(pi, cot)?)?;
        let real = self.select(reflect, reflection, y)?;
        // Poles: -inf at zero, NaN at the negative integers.
        let negative_integer = self.0.and(
            self.cmp(Compare::Lt, input, zero)?,
            self.cmp(Compare::Eq, input, self.un(Unary::Floor, input)?)?,
        )?;
        let r = self.select(
            self.cmp(Compare::Eq, input, zero)?,
            self.c(f64::NEG_INFINITY)?,
            real,
        )?;
        self.select(negative_integer, self.c(f64::NAN)?, r)
    }
}

// Cephes' i0e (JAX's `_i0e_impl64`; `_i0e_impl32` takes the last 18 and 7).
const I0E_A64: &[f64] = &[
    -4.41534164647933937950E-18,
    3.33079451882223809783E-17,
    -2.43127984654795469359E-16,
    1.71539128555513303061E-15,
    -1.16853328779934516808E-14,
    7.67618549860493561688E-14,
    -4.85644678311192946090E-13,
    2.95505266312963983461E-12,
    -1.72682629144155570723E-11,
    9.67580903537323691224E-11,
    -5.18979560163526290666E-10,
    2.65982372468238665035E-9,
    -1.30002500998624804212E-8,
    6.04699502254191894932E-8,
    -2.67079385394061173391E-7,
    1.11738753912010371815E-6,
    -4.41673835845875056359E-6,
    1.64484480707288970893E-5,
    -5.75419501008210370398E-5,
    1.88502885095841655729E-4,
    -5.76375574538582365885E-4,
    1.63947561694133579842E-3,
    -4.32430999505057594430E-3,
    1.05464603945949983183E-2,
    -2.37374148058994688156E-2,
    4.93052842396707084878E-2,
    -9.49010970480476444210E-2,
    1.71620901522208775349E-1,
    -3.04682672343198398683E-1,
    6.76795274409476084995E-1,
];
const I0E_B64: &[f64] = &[
    -7.23318048787475395456E-18,
    -4.83050448594418207126E-18,
    4.46562142029675999901E-17,
    3.46122286769746109310E-17,
    -2.82762398051658348494E-16,
    -3.42548561967721913462E-16,
    1.77256013305652638360E-15,
    3.81168066935262242075E-15,
    -9.55484669882830764870E-15,
    -4.15056934728722208663E-14,
    1.54008621752140982691E-14,
    3.85277838274214270114E-13,
    7.18012445138366623367E-13,
    -1.79417853150680611778E-12,
    -1.32158118404477131188E-11,
    -3.14991652796324136454E-11,
    1.18891471078464383424E-11,
    4.94060238822496958910E-10,
    3.39623202570838634515E-9,
    2.26666899049817806459E-8,
    2.04891858946906374183E-7,
    2.89137052083475648297E-6,
    6.88975834691682398426E-5,
    3.36911647825569408990E-3,
    8.04490411014108831608E-1,
];

// Cephes' i1e (CHLO's decomposition of `chlo.bessel_i1e`; its f32 version
// takes the last 17 and 7).
const I1E_A64: &[f64] = &[
    2.77791411276104639959E-18,
    -2.11142121435816608115E-17,
    1.55363195773620046921E-16,
    -1.10559694773538630805E-15,
    7.60068429473540693410E-15,
    -5.04218550472791168711E-14,
    3.22379336594557470981E-13,
    -1.98397439776494371520E-12,
    1.17361862988909016308E-11,
    -6.66348972350202774223E-11,
    3.62559028155211703701E-10,
    -1.88724975172282928790E-9,
    9.38153738649577178388E-9,
    -4.44505912879632808065E-8,
    2.00329475355213526229E-7,
    -8.56872026469545474066E-7,
    3.47025130813767847674E-6,
    -1.32731636560394358279E-5,
    4.78156510755005422638E-5,
    -1.61760815825896745588E-4,
    5.12285956168575772895E-4,
    -1.51357245063125314899E-3,
    4.15642294431288815669E-3,
    -1.05640848946261981558E-2,
    2.47264490306265168283E-2,
    -5.29459812080949914269E-2,
    1.02643658689847095384E-1,
    -1.76416518357834055153E-1,
    2.52587186443633654823E-1,
];
const I1E_B64: &[f64] = &[
    7.51729631084210481353E-18,
    4.41434832307170791151E-18,
    -4.65030536848935832153E-17,
    -3.20952592199342395980E-17,
    2.96262899764595013876E-16,
    3.30820231092092828324E-16,
    -1.88035477551078244854E-15,
    -3.81440307243700780478E-15,
    1.04202769841288027642E-14,
    4.27244001671195135429E-14,
    -2.10154184277266431302E-14,
    -4.08355111109219731823E-13,
    -7.19855177624590851209E-13,
    2.03562854414708950722E-12,
    1.41258074366137813316E-11,
    3.25260358301548823856E-11,
    -1.89749581235054123450E-11,
    -5.58974346219658380687E-10,
    -3.83538038596423702205E-9,
    -2.63146884688951950684E-8,
    -2.51223623787020892529E-7,
    -3.88256480887769039346E-6,
    -1.10588938762623716291E-4,
    -9.76109749136146840777E-3,
    7.78576235018280120474E-1,
];

// Giles' erfinv (XLA's `ErfInv32`, `ErfInv64`).
const ERF_INV32_LT5: &[f64] = &[
    2.81022636e-08,
    3.43273939e-07,
    -3.5233877e-06,
    -4.39150654e-06,
    0.00021858087,
    -0.00125372503,
    -0.00417768164,
    0.246640727,
    1.50140941,
];
const ERF_INV32_GE5: &[f64] = &[
    -0.000200214257,
    0.000100950558,
    0.00134934322,
    -0.00367342844,
    0.00573950773,
    -0.0076224613,
    0.00943887047,
    1.00167406,
    2.83297682,
];
const ERF_INV64_LT6_25: &[f64] = &[
    -3.6444120640178196996e-21,
    -1.685059138182016589e-19,
    1.2858480715256400167e-18,
    1.115787767802518096e-17,
    -1.333171662854620906e-16,
    2.0972767875968561637e-17,
    6.6376381343583238325e-15,
    -4.0545662729752068639e-14,
    -8.1519341976054721522e-14,
    2.6335093153082322977e-12,
    -1.2975133253453532498e-11,
    -5.4154120542946279317e-11,
    1.051212273321532285e-09,
    -4.1126339803469836976e-09,
    -2.9070369957882005086e-08,
    4.2347877827932403518e-07,
    -1.3654692000834678645e-06,
    -1.3882523362786468719e-05,
    0.0001867342080340571352,
    -0.00074070253416626697512,
    -0.0060336708714301490533,
    0.24015818242558961693,
    1.6536545626831027356,
];
const ERF_INV64_LT16: &[f64] = &[
    2.2137376921775787049e-09,
    9.0756561938885390979e-08,
    -2.7517406297064545428e-07,
    1.8239629214389227755e-08,
    1.5027403968909827627e-06,
    -4.013867526981545969e-06,
    2.9234449089955446044e-06,
    1.2475304481671778723e-05,
    -4.7318229009055733981e-05,
    6.8284851459573175448e-05,
    2.4031110387097893999e-05,
    -0.0003550375203628474796,
    0.00095328937973738049703,
    -0.0016882755560235047313,
    0.0024914420961078508066,
    -0.0037512085075692412107,
    0.005370914553590063617,
    1.0052589676941592334,
    3.0838856104922207635,
];
const ERF_INV64_GE16: &[f64] = &[
    -2.7109920616438573243e-11,
    -2.5556418169965252055e-10,
    1.5076572693500548083e-09,
    -3.7894654401267369937e-09,
    7.6157012080783393804e-09,
    -1.4960026627149240478e-08,
    2.9147953450901080826e-08,
    -6.7711997758452339498e-08,
    2.2900482228026654717e-07,
    -9.9298272942317002539e-07,
    4.5260625972231537039e-06,
    -1.9681778105531670567e-05,
    7.5995277030017761139e-05,
    -0.00021503011930044477347,
    -0.00013871931833623122026,
    1.0103004648645343977,
    4.8499064014085844221,
];

// Lanczos' approximation, g = 7, n = 9 (XLA's `kLanczosCoefficients`).
const LANCZOS_GAMMA: f64 = 7.0;
const LANCZOS_BASE: f64 = 0.999_999_999_999_809_9;
const LANCZOS: &[f64] = &[
    676.520368121885098567009190444019,
    -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,
    -176.61502916214059906584551354,
    12.507343278686904814458936853,
    -0.13857109526572011689554707,
    9.984369578019570859563e-6,
    1.50563273514931155834e-7,
];
