//! Zipfian keys: an exact generator, Gray et al.'s approximate one (the
//! one peer harnesses use), and YCSB's scrambling of ranks over the keys.
//!
//! # The exact generator ([`Zipf`], `--zipf exact`, the default)
//!
//! Ranks `1..=n` with `P(k) = k^-θ / ζ(n, θ)`, where `ζ(n, θ) = Σ_{i=1..n} i^-θ`.
//!
//! The BOHM paper (bohm-vldb2015.txt, section 4.2.1) draws the records of a
//! YCSB transaction from a Zipfian distribution with parameter theta (0 for
//! low contention, 0.9 for high), citing Gray et al.'s "Quickly generating
//! billion-record synthetic databases". That paper's generator is exact for
//! ranks 1 and 2 only: beyond them it inverts a continuous approximation, and
//! at `θ = 0.9, n = 1,000` it draws rank 3 about 16% too often (a unit test
//! of [`zeta`] against the exact probabilities would catch it). [`Zipf`]
//! uses **rejection-inversion** instead (Hörmann and Derflinger, "Rejection-
//! inversion to generate variates from monotone discrete distributions",
//! ACM TOMACS 1996), which samples the exact distribution:
//!
//! * Let `h(x) = x^-θ` and `H` be an antiderivative of `h`. Rank `k ≥ 2`
//!   owns the interval `(H(k + ½) − h(k), H(k + ½)]` of length `h(k)`; rank 1
//!   owns `(H(3/2) − 1, H(3/2)]`. Because `h` is convex and decreasing these
//!   intervals do not overlap, and each lies inside `[H(k − ½), H(k + ½)]`.
//! * Draw `u` uniformly from `(H(3/2) − 1, H(n + ½)]`, let `x = H⁻¹(u)` and
//!   `k = round(x)`: then `u ≤ H(k + ½)`. Accept `k` if `u` lies in `k`'s
//!   interval, otherwise draw again. Each rank is accepted with probability
//!   proportional to `h(k)`: exactly Zipfian. The expected number of rounds
//!   is `(H(n + ½) − H(3/2) + 1) / ζ(n, θ)`, under 1.02 for every `θ` and `n`
//!   we tried (0.01 to 50, 2 to 10^5), and a cheap "squeeze" test (`k − x` at
//!   most its value for rank 2) accepts most draws without evaluating `H`
//!   again.
//!
//! Setup is O(1) (no `ζ(n, θ)` sum, so `n` may be in the billions), a draw
//! costs a few `exp`/`ln` evaluations and never allocates, and any `θ ≥ 0`
//! works (1 and above included). `θ = 0` is drawn as an exactly uniform
//! integer instead (one multiply-shift).
//!
//! `H` and `H⁻¹` are written with `expm1`/`ln_1p`-based helpers so they stay
//! accurate near `θ = 1` (where `H(x) → ln x`). The uniform variate has 53
//! bits, so probabilities are exact up to about 2^-53: for `θ > 1` the far
//! tail, whose ranks have less than that together, is folded into rank `n`.
//!
//! # Gray et al.'s generator ([`Gray`], `--zipf gray`)
//!
//! The generator of Gray et al. (SIGMOD 1994), as the harnesses of
//! DBx1000, CCBench and Silo and YCSB's `ZipfianGenerator` draw it, so that
//! a comparison with their numbers draws the same keys. With
//! `ζ_n = ζ(n, θ)`, `α = 1 / (1 − θ)` and
//! `η = (1 − (2/n)^(1−θ)) / (1 − ζ(2, θ) / ζ_n)`, and `u` uniform in
//! `[0, 1)`: rank 1 if `u·ζ_n < 1`, rank 2 if `u·ζ_n < 1 + 2^-θ`, else
//! `1 + ⌊n · (η·u − η + 1)^α⌋`. Ranks 1 and 2 are exact; the others follow
//! a continuous approximation (rank 3 of `n = 1,000, θ = 0.9` comes 16% too
//! often, see [`Gray::probability`]). Setup sums `ζ(n, θ)` once, O(n):
//! about 0.1 s for 10 million keys. `θ ≥ 1` is refused with an error
//! rather than approximated: `α` is infinite at 1, and the harnesses this
//! generator is for run it below 1 (the exact generator takes any `θ`).
//!
//! # Scrambling ([`scramble`], `--scramble`)
//!
//! Unscrambled, rank `r` is key `r − 1`: the hot keys are neighbours.
//! Scrambled, it is `|fnv1a64(r − 1)| mod n` (the 64-bit FNV-1a hash of the
//! rank's 8 little-endian bytes, read as a signed number), as YCSB's
//! `ScrambledZipfianGenerator` spreads its ranks over the keys with
//! `Utils.fnvhash64`. The map is not one-to-one: a key may get two ranks and
//! another none, as in YCSB. YCSB itself draws its ranks from a Zipfian
//! distribution over 10^10 items before taking them modulo the key count;
//! [`ZipfKeys`] draws them over the `n` keys, so that scrambling moves hot
//! keys without changing how hot they are (beyond those collisions).

use rand::RngCore;

/// Largest theta accepted (steeper distributions put all mass on rank 1).
pub const MAX_THETA: f64 = 100.0;

/// A Zipfian distribution over the ranks `1..=n` with parameter `theta`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zipf {
    n: u64,
    theta: f64,
    /// `1 − θ`.
    q: f64,
    /// `H(3/2) − h(1)`: the lower end of the range `u` is drawn from.
    h_lo: f64,
    /// `H(n + ½)`: the upper end.
    h_hi: f64,
    /// The squeeze: `k − x ≤ s` means `u` lies in `k`'s interval.
    s: f64,
}

/// 53 random bits: uniform in `[0, 1)`.
#[inline]
fn unit<R: RngCore + ?Sized>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// `(e^t − 1) / t`, accurate near 0.
#[inline]
fn expm1_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.exp_m1() / t
    } else {
        1.0 + t * (0.5 + t / 6.0)
    }
}

/// `ln(1 + t) / t`, accurate near 0.
#[inline]
fn ln1p_over(t: f64) -> f64 {
    if t.abs() > 1e-8 {
        t.ln_1p() / t
    } else {
        1.0 - t * (0.5 - t / 3.0)
    }
}

impl Zipf {
    /// A Zipfian distribution over `1..=n`; `theta` must be finite, at least
    /// 0 and at most [`MAX_THETA`]. The error is a one-line message.
    pub fn new(n: u64, theta: f64) -> Result<Zipf, String> {
        if n == 0 {
            return Err("a Zipfian distribution needs at least one item".into());
        }
        if !theta.is_finite() || !(0.0..=MAX_THETA).contains(&theta) {
            return Err(format!(
                "theta {theta} is out of range: use a number from 0 (uniform) to {MAX_THETA} (0.9 is a hotspot)"
            ));
        }
        let q = 1.0 - theta;
        let mut z = Zipf { n, theta, q, h_lo: 0.0, h_hi: 0.0, s: 0.0 };
        z.h_lo = z.big_h(1.5) - 1.0;
        z.h_hi = z.big_h(n as f64 + 0.5);
        z.s = 2.0 - z.big_h_inv(z.big_h(2.5) - z.h(2.0));
        Ok(z)
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The parameter.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `h(x) = x^-θ`.
    #[inline]
    fn h(&self, x: f64) -> f64 {
        (-self.theta * x.ln()).exp()
    }

    /// `H(x) = (x^(1−θ) − 1) / (1 − θ)` (`ln x` at `θ = 1`): an antiderivative of `h`.
    #[inline]
    fn big_h(&self, x: f64) -> f64 {
        let l = x.ln();
        expm1_over(self.q * l) * l
    }

    /// The inverse of [`Self::big_h`].
    #[inline]
    fn big_h_inv(&self, y: f64) -> f64 {
        let t = self.q * y;
        if t <= -1.0 {
            // Only rounding gets here (θ > 1, y at H's limit): the far tail.
            return f64::INFINITY;
        }
        (ln1p_over(t) * y).exp()
    }

    /// Draws a rank in `1..=n` (1 is the most frequent).
    #[inline]
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> u64 {
        if self.theta == 0.0 {
            // Exactly uniform: Lemire's multiply-shift (bias below n / 2^64).
            return ((rng.next_u64() as u128 * self.n as u128) >> 64) as u64 + 1;
        }
        loop {
            let r = unit(rng);
            let u = self.h_hi + r * (self.h_lo - self.h_hi);
            let x = self.big_h_inv(u);
            let k = ((x + 0.5) as u64).clamp(1, self.n);
            let kf = k as f64;
            if kf - x <= self.s || u >= self.big_h(kf + 0.5) - self.h(kf) {
                return k;
            }
        }
    }

    /// The exact probability of rank `k`, given `zeta = ζ(n, θ)` (see [`zeta`]).
    pub fn probability(&self, k: u64, zeta: f64) -> f64 {
        if k == 0 || k > self.n {
            return 0.0;
        }
        self.h(k as f64) / zeta
    }
}

/// `ζ(n, θ) = Σ_{i=1..n} i^-θ`, summed from the smallest term up (O(n); for
/// tests and reports, the generator does not need it).
pub fn zeta(n: u64, theta: f64) -> f64 {
    (1..=n).rev().map(|i| (-theta * (i as f64).ln()).exp()).sum()
}

/// Which generator draws the ranks (`--zipf`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZipfKind {
    /// [`Zipf`]: the exact distribution (the default, and what earlier
    /// results measured).
    #[default]
    Exact,
    /// [`Gray`]: Gray et al.'s approximation, as peer harnesses draw it.
    Gray,
}

impl ZipfKind {
    /// The names, as `--zipf` takes them.
    pub const NAMES: &'static [&'static str] = &["exact", "gray"];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            ZipfKind::Exact => "exact",
            ZipfKind::Gray => "gray",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Result<ZipfKind, String> {
        match s {
            "exact" => Ok(ZipfKind::Exact),
            "gray" => Ok(ZipfKind::Gray),
            _ => Err(format!("unknown Zipfian generator '{s}': expected exact or gray")),
        }
    }
}

/// Gray et al.'s Zipfian generator over the ranks `1..=n` (module docs):
/// exact for ranks 1 and 2, approximate beyond.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Gray {
    n: u64,
    theta: f64,
    /// `ζ(n, θ)`.
    zetan: f64,
    /// `1 / (1 − θ)`.
    alpha: f64,
    /// `(1 − (2/n)^(1−θ)) / (1 − ζ(2, θ) / ζ(n, θ))` (0 for `n ≤ 2`, where
    /// ranks 1 and 2 take every draw).
    eta: f64,
    /// `ζ(2, θ) = 1 + 2^-θ`: below it (times `1 / ζ(n, θ)`), rank 2.
    zeta2: f64,
}

impl Gray {
    /// Gray et al.'s generator over `1..=n`: `theta` from 0 up to, not
    /// including, 1. Sums `ζ(n, θ)`, O(n). The error is a one-line message.
    pub fn new(n: u64, theta: f64) -> Result<Gray, String> {
        Gray::check(theta)?;
        if n == 0 {
            return Err("a Zipfian distribution needs at least one item".into());
        }
        let zetan = if theta == 0.0 { n as f64 } else { zeta(n, theta) };
        let zeta2 = 1.0 + (-theta * 2f64.ln()).exp();
        let q = 1.0 - theta;
        let eta = if n <= 2 { 0.0 } else { (1.0 - (2.0 / n as f64).powf(q)) / (1.0 - zeta2 / zetan) };
        Ok(Gray { n, theta, zetan, alpha: 1.0 / q, eta, zeta2 })
    }

    /// Refuses a `theta` the generator cannot take (without summing `ζ`).
    pub fn check(theta: f64) -> Result<(), String> {
        if !theta.is_finite() || !(0.0..1.0).contains(&theta) {
            return Err(format!(
                "theta {theta} is out of range for Gray et al.'s generator: it takes 0 (uniform) up to, \
                 not including, 1 (its exponent is 1 / (1 - theta)); the exact generator takes any theta from 0"
            ));
        }
        Ok(())
    }

    /// The number of ranks.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// The parameter.
    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `ζ(n, θ)`, summed at setup.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// Draws a rank in `1..=n` (1 is the most frequent).
    #[inline]
    pub fn sample<R: RngCore + ?Sized>(&self, rng: &mut R) -> u64 {
        let u = unit(rng);
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 1;
        }
        if uz < self.zeta2 {
            return 2;
        }
        // u ≥ ζ(2)/ζ(n) puts the power at 2/n or more, so rank 3 or more,
        // and u < 1 keeps it below 1, so rank n at most; the clamp is for
        // rounding only.
        let x = self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha);
        (1 + x as u64).clamp(1, self.n)
    }

    /// The probability that [`Self::sample`] draws rank `k` (ignoring
    /// rounding): `1/ζ(n, θ)` and `2^-θ/ζ(n, θ)` for ranks 1 and 2, exact;
    /// for `k ≥ 3` the width of the `u` that the formula maps to `k`,
    /// `((k/n)^(1−θ) − ((k−1)/n)^(1−θ)) / η`, an approximation of Zipf's.
    pub fn probability(&self, k: u64) -> f64 {
        match k {
            0 => 0.0,
            1 => 1.0 / self.zetan,
            2 => (self.zeta2 - 1.0) / self.zetan,
            k if k > self.n => 0.0,
            k => {
                let (n, q) = (self.n as f64, 1.0 - self.theta);
                ((k as f64 / n).powf(q) - ((k - 1) as f64 / n).powf(q)) / self.eta
            }
        }
    }
}

/// The 64-bit FNV-1a hash of `x`'s 8 little-endian bytes (YCSB's
/// `Utils.fnvhash64`, before its absolute value).
#[inline]
pub fn fnv1a64(x: u64) -> u64 {
    const OFFSET: u64 = 0xCBF2_9CE4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01B3;
    x.to_le_bytes().iter().fold(OFFSET, |h, &b| (h ^ b as u64).wrapping_mul(PRIME))
}

/// Item `item` (a 0-based rank) scrambled over `0..n` as YCSB's
/// `ScrambledZipfianGenerator` does: the hash read as a signed number, its
/// absolute value, modulo `n` (`n` at least 1). Java's `Math.abs` leaves
/// the one hash `2^63` negative; here it is `2^63`, so the key stays in range.
#[inline]
pub fn scramble(item: u64, n: u64) -> u64 {
    (fnv1a64(item) as i64).unsigned_abs() % n
}

/// The generator behind [`ZipfKeys`].
#[derive(Clone, Copy, Debug, PartialEq)]
enum Ranks {
    Exact(Zipf),
    Gray(Gray),
}

/// Zipfian keys `0..n`: a rank drawn by the chosen generator, then rank
/// `r` is key `r − 1`, or, scrambled, [`scramble`]`(r − 1, n)`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ZipfKeys {
    ranks: Ranks,
    n: u64,
    scramble: bool,
}

impl ZipfKeys {
    /// Keys `0..n` with parameter `theta` drawn by `kind`'s generator,
    /// scrambled or not. `kind` Gray sums `ζ(n, θ)` here, O(n).
    pub fn new(kind: ZipfKind, n: u64, theta: f64, scramble: bool) -> Result<ZipfKeys, String> {
        let ranks = match kind {
            ZipfKind::Exact => Ranks::Exact(Zipf::new(n, theta)?),
            ZipfKind::Gray => Ranks::Gray(Gray::new(n, theta)?),
        };
        Ok(ZipfKeys { ranks, n, scramble })
    }

    /// The number of keys.
    pub fn n(&self) -> u64 {
        self.n
    }

    /// Draws a key in `0..n`.
    #[inline]
    pub fn key<R: RngCore + ?Sized>(&self, rng: &mut R) -> u64 {
        let r = match &self.ranks {
            Ranks::Exact(z) => z.sample(rng),
            Ranks::Gray(g) => g.sample(rng),
        };
        if self.scramble {
            scramble(r - 1, self.n)
        } else {
            r - 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    #[test]
    fn h_inverse_round_trips() {
        for theta in [0.0, 0.3, 0.9, 0.999_999_999, 1.0, 1.000_000_001, 1.5, 7.0] {
            let z = Zipf::new(1000, theta).unwrap();
            for x in [0.5f64, 1.0, 1.5, 2.5, 10.0, 999.5, 1000.5] {
                if x.powf(1.0 - theta) < 1e-8 {
                    // H(x) is within 1e-8 of its limit: H⁻¹ is ill-conditioned
                    // there, and such ranks together have probability < 1e-8.
                    continue;
                }
                let back = z.big_h_inv(z.big_h(x));
                assert!((back - x).abs() < 1e-9 * x, "theta {theta}: H^-1(H({x})) = {back}");
            }
        }
    }

    #[test]
    fn bad_parameters_are_refused() {
        assert!(Zipf::new(0, 0.5).is_err());
        for t in [-0.1, f64::NAN, f64::INFINITY, 101.0] {
            let e = Zipf::new(10, t).unwrap_err();
            assert!(e.contains("out of range"), "{e}");
        }
        assert!(Zipf::new(10, 1.0).is_ok() && Zipf::new(1, 0.9).is_ok());
    }

    #[test]
    fn one_item_is_always_rank_one() {
        let mut rng = SmallRng::seed_from_u64(1);
        for theta in [0.0, 0.9, 3.0] {
            let z = Zipf::new(1, theta).unwrap();
            assert!((0..1000).all(|_| z.sample(&mut rng) == 1));
        }
    }

    #[test]
    fn zeta_sums_the_terms() {
        assert_eq!(zeta(3, 0.0), 3.0);
        assert!((zeta(2, 1.0) - 1.5).abs() < 1e-15);
        assert!((zeta(4, 2.0) - (1.0 + 0.25 + 1.0 / 9.0 + 0.0625)).abs() < 1e-15);
    }

    /// Counts of each rank of `g` in `samples` draws (index 0 unused).
    fn gray_histogram(g: &Gray, samples: u64, seed: u64) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(seed);
        let mut h = vec![0u64; g.n() as usize + 1];
        for _ in 0..samples {
            h[g.sample(&mut rng) as usize] += 1;
        }
        h
    }

    /// `count` of `samples` draws is within six standard deviations of
    /// probability `p` (with a fixed seed it cannot flake; a wrong
    /// probability is off by far more).
    fn close(count: u64, samples: u64, p: f64) -> bool {
        let exp = samples as f64 * p;
        (count as f64 - exp).abs() <= 6.0 * (exp * (1.0 - p)).sqrt() + 1.0
    }

    #[test]
    fn gray_draws_ranks_one_and_two_with_the_exact_probabilities() {
        let samples = 1_000_000;
        for n in [1000, 1_000_000] {
            for theta in [0.5, 0.9, 0.99] {
                let g = Gray::new(n, theta).unwrap();
                let zt = zeta(n, theta);
                assert!((g.zetan() - zt).abs() < 1e-9 * zt);
                let h = gray_histogram(&g, samples, 17);
                assert!(h[0] == 0 && h.iter().sum::<u64>() == samples);
                let (p1, p2) = (1.0 / zt, 2f64.powf(-theta) / zt);
                assert!(close(h[1], samples, p1), "n {n} theta {theta}: rank 1 {} of {samples}, p {p1}", h[1]);
                assert!(close(h[2], samples, p2), "n {n} theta {theta}: rank 2 {} of {samples}, p {p2}", h[2]);
                assert!((g.probability(1) - p1).abs() < 1e-12 && (g.probability(2) - p2).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn gray_follows_its_own_formula_beyond_rank_two() {
        let (n, samples) = (1000, 1_000_000);
        for theta in [0.3, 0.9, 0.99] {
            let g = Gray::new(n, theta).unwrap();
            let total: f64 = (1..=n).map(|k| g.probability(k)).sum();
            assert!((total - 1.0).abs() < 1e-9, "theta {theta}: probabilities add up to {total}");
            let h = gray_histogram(&g, samples, 23);
            for k in 3..=20 {
                let p = g.probability(k);
                assert!(close(h[k as usize], samples, p), "theta {theta} rank {k}: {} draws, p {p}", h[k as usize]);
            }
            // The last ranks too (the top of the formula's range).
            let tail: u64 = h[901..].iter().sum();
            let p: f64 = (901..=n).map(|k| g.probability(k)).sum();
            assert!(close(tail, samples, p), "theta {theta}: ranks 901.. {tail} draws, p {p}");
        }
        // The approximation: rank 3 of Zipf(1000, 0.9) about 16% too often.
        let g = Gray::new(1000, 0.9).unwrap();
        let exact = 3f64.powf(-0.9) / zeta(1000, 0.9);
        assert!((g.probability(3) / exact - 1.16).abs() < 0.01, "{} vs {exact}", g.probability(3));
    }

    #[test]
    fn gray_at_theta_zero_is_uniform() {
        let g = Gray::new(100, 0.0).unwrap();
        let h = gray_histogram(&g, 200_000, 3);
        // 2,000 expected per rank, standard deviation about 44.
        assert!(h[1..].iter().all(|&c| (1700..2300).contains(&c)), "{h:?}");
        assert!((1..=100).all(|k| (g.probability(k) - 0.01).abs() < 1e-12));
    }

    #[test]
    fn gray_takes_small_tables_and_refuses_theta_one_and_above() {
        let mut rng = SmallRng::seed_from_u64(2);
        let g = Gray::new(1, 0.9).unwrap();
        assert!((0..1000).all(|_| g.sample(&mut rng) == 1));
        let g = Gray::new(2, 0.9).unwrap();
        let h = gray_histogram(&g, 100_000, 4);
        assert!(close(h[1], 100_000, 1.0 / (1.0 + 0.5f64.powf(0.9))), "{h:?}");
        for n in [3, 4, 10] {
            let h = gray_histogram(&Gray::new(n, 0.99).unwrap(), 100_000, 5);
            assert!(h[1..].iter().all(|&c| c > 0), "n {n}: every rank appears: {h:?}");
        }
        assert!(Gray::new(0, 0.5).is_err());
        for t in [1.0, 1.5, -0.1, f64::NAN, f64::INFINITY] {
            let e = Gray::new(10, t).unwrap_err();
            assert!(e.contains("out of range for Gray") && e.contains("exact generator"), "{e}");
        }
        assert!(Gray::new(10, 0.999_999).is_ok());
    }

    #[test]
    fn scramble_is_ycsbs_fnv_hash_modulo_n() {
        // FNV-1a 64 test vectors ("a", "foobar"), on the fold this uses.
        let fnv =
            |b: &[u8]| b.iter().fold(0xCBF2_9CE4_8422_2325u64, |h, &x| (h ^ x as u64).wrapping_mul(0x100_0000_01B3));
        assert_eq!((fnv(b"a"), fnv(b"foobar")), (0xAF63_DC4C_8601_EC8C, 0x8594_4171_F739_67E8));
        assert_eq!(fnv1a64(0), fnv(&[0; 8]));
        assert_eq!(fnv1a64(0x0102), fnv(&[2, 1, 0, 0, 0, 0, 0, 0]), "little-endian bytes");
        // 0xA8C7F832281A39C5 is negative as a signed number: its absolute value.
        assert_eq!(fnv1a64(0), 0xA8C7_F832_281A_39C5);
        assert_eq!(scramble(0, 1_000_000), (0xA8C7_F832_281A_39C5u64.wrapping_neg()) % 1_000_000);
        assert_eq!(scramble(0, 1_000_000), 377_211);
        // In range, and the ten hottest ranks spread over the table.
        for n in [1, 2, 7, 1000, 1_000_000, u64::MAX] {
            assert!((0..10_000).all(|r| scramble(r, n) < n), "n {n}");
        }
        let top: Vec<u64> = (0..10).map(|r| scramble(r, 1_000_000)).collect();
        let (lo, hi) = (*top.iter().min().unwrap(), *top.iter().max().unwrap());
        assert!(hi - lo > 100_000, "the ten hottest keys {top:?} are close together");
        let mut d = top.clone();
        d.sort_unstable();
        d.dedup();
        assert_eq!(d.len(), 10, "{top:?}");
    }

    #[test]
    fn zipf_keys_draw_the_generators_ranks_deterministically() {
        let draw = |kind, scrambled, seed| {
            let k = ZipfKeys::new(kind, 1000, 0.9, scrambled).unwrap();
            let mut rng = SmallRng::seed_from_u64(seed);
            (0..200).map(|_| k.key(&mut rng)).collect::<Vec<_>>()
        };
        for kind in [ZipfKind::Exact, ZipfKind::Gray] {
            for s in [false, true] {
                assert_eq!(draw(kind, s, 1), draw(kind, s, 1), "{kind:?} scrambled {s}");
                assert_ne!(draw(kind, s, 1), draw(kind, s, 2));
                assert!(draw(kind, s, 3).iter().all(|&k| k < 1000));
            }
            // Scrambling maps each key of the plain draw through the hash.
            let plain = draw(kind, false, 4);
            assert_eq!(draw(kind, true, 4), plain.iter().map(|&k| scramble(k, 1000)).collect::<Vec<_>>());
        }
        // The exact, unscrambled keys are the generator's ranks minus one:
        // the draws of earlier runs.
        let z = Zipf::new(1000, 0.9).unwrap();
        let mut rng = SmallRng::seed_from_u64(1);
        assert_eq!(draw(ZipfKind::Exact, false, 1), (0..200).map(|_| z.sample(&mut rng) - 1).collect::<Vec<_>>());
        assert_ne!(draw(ZipfKind::Exact, false, 1), draw(ZipfKind::Gray, false, 1));
        assert!(ZipfKeys::new(ZipfKind::Gray, 1000, 1.0, false).is_err());
        assert!(ZipfKeys::new(ZipfKind::Exact, 1000, 1.0, false).is_ok());
    }

    #[test]
    fn zipf_kinds_parse_their_names() {
        for &name in ZipfKind::NAMES {
            assert_eq!(ZipfKind::parse(name).unwrap().name(), name);
        }
        assert_eq!(ZipfKind::default(), ZipfKind::Exact);
        let e = ZipfKind::parse("fast").unwrap_err();
        assert!(e.contains("'fast'") && e.contains("expected exact or gray"), "{e}");
    }
}
