// exp, log, tanh, sigmoid and their helpers, written once over a lane type V:
// V is T itself (detail/math.hpp: host and device code) or a register of T's
// (backend/cpu/math_lanes.hpp: one copy per x86 ISA). The same operations in the
// same order on every lane, so a vector lane gives the scalar function's bits.
// Hence no data-dependent branch: a special case is a select, and its lanes
// compute from a harmless argument meanwhile (no signed overflow for scalars).
// No include guard: included once per lane family. The including namespace provides
//   lane_type (a concept), element_t<V> (T), ints_t<V> (signed integers of T's width,
//   one per lane), fma, mul, div, select, to_ints, from_ints<V>,
//   and the scalar facts format, constants, inverse_factorial, quiet_nan, infinity;
// DEVTENSOR_MATH_FUNCTION is `inline` plus the family's attributes.

/// |x|.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V abs(V x) {
    using I = ints_t<V>;
    return from_ints<V>(to_ints(x) & ~I(sign_bit<element_t<V>>()));
}

/// |magnitude| with the sign of `sign`.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V copysign(V magnitude, V sign) {
    using I = ints_t<V>;
    const I s = sign_bit<element_t<V>>();
    return from_ints<V>((to_ints(magnitude) & ~s) | (to_ints(sign) & s));
}

/// 2^k for k in [min_exponent, max_exponent].
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V pow2(ints_t<V> k) {
    using T = element_t<V>;
    return from_ints<V>((k + format<T>::bias) << (format<T>::precision - 1));
}

/// v * 2^k rounded once, for |k| up to twice the exponent range: two exact-range
/// factors, the first product exact (no overflow or underflow yet), the second rounded.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V scale(V v, ints_t<V> k) {
    const ints_t<V> k1 = k / 2;
    return mul(mul(v, pow2<V>(k1)), pow2<V>(k - k1));
}

/// k as a real, |k| < 2^(precision - 2): k added to the bits of 1.5 * 2^(precision - 1)
/// (then the integer k + that, exactly) minus that.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V small_int_to_real(ints_t<V> k) {
    const V shifter(constants<element_t<V>>::shifter);
    return from_ints<V>(to_ints(shifter) + k) - shifter;
}

// ---- error-free transformations ---------------------------------------------------------
// Sums of values that are never plain products: no compiler may contract them.

/// s + e == a + b exactly, s = a + b rounded (Knuth; any magnitudes).
template <lane_type V>
DEVTENSOR_MATH_FUNCTION void two_sum(V a, V b, V& s, V& e) {
    s = a + b;
    const V a1 = s - b;
    const V b1 = s - a1;
    e = (a - a1) + (b - b1);
}

/// The same for |a| >= |b| (or a == 0) (Dekker).
template <lane_type V>
DEVTENSOR_MATH_FUNCTION void fast_two_sum(V a, V b, V& s, V& e) {
    s = a + b;
    e = b - (s - a);
}

/// c0 + x (c1 + x (c2 + ...)) by fma (Horner); the coefficients rounded to T.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V poly(V, std::type_identity_t<V> c0) {
    return c0;
}
template <lane_type V, class... C>
DEVTENSOR_MATH_FUNCTION V poly(V x, std::type_identity_t<V> c0, C... rest) {
    return fma(poly(x, static_cast<element_t<V>>(rest)...), x, c0);
}

// ---- exp -----------------------------------------------------------------------------------

/// exp(x) = 2^k (1 + hi + lo) for finite |x| <= exp_clamp, hi + lo as a pair
/// (|hi + lo| < 0.42, lo below half an ulp of hi, ~2^-(p+6) relative error).
/// x = k ln2 + r exactly as the pair (r, rc) (Cody–Waite with an exact first
/// step), then exp(r) - 1 = r + r² Q(r) with Q's Taylor series (1/(j+2)!).
template <lane_type V>
DEVTENSOR_MATH_FUNCTION void exp_reduced(V x, ints_t<V>& k, V& hi, V& lo) {
    using T = element_t<V>;
    using c = constants<T>;
    const V shifter(c::shifter);
    const V t = fma(x, V(c::log2e), shifter);
    const V kf = t - shifter;  // an integer, exact
    k = to_ints(t) - to_ints(shifter);
    const V a = fma(-kf, V(c::ln2_hi), x);  // exact: k ln2_hi is, and the difference is (Sterbenz)
    const V b = mul(-kf, V(c::ln2_lo));
    V r, rc;
    two_sum(a, b, r, rc);
    const V z = mul(r, r);
    const V z_lo = fma(r, r, -z);  // r² = z + z_lo exactly
    V q;
    if constexpr (sizeof(T) == 4) {
        q = poly(r, 0.5f, inverse_factorial<3>, inverse_factorial<4>, inverse_factorial<5>,
                 inverse_factorial<6>, inverse_factorial<7>, inverse_factorial<8>);
    } else {
        q = poly(r, 0.5, inverse_factorial<3>, inverse_factorial<4>, inverse_factorial<5>,
                 inverse_factorial<6>, inverse_factorial<7>, inverse_factorial<8>, inverse_factorial<9>,
                 inverse_factorial<10>, inverse_factorial<11>, inverse_factorial<12>, inverse_factorial<13>);
    }
    // exp(r + rc) - 1 = r + r² Q(r) + rc (1 + r) to well below an ulp
    const V tail = fma(z, q, fma(V(T(0.5)), z_lo, fma(rc, r, rc)));
    fast_two_sum(r, tail, hi, lo);
}

/// e^x; overflow gives inf, underflow a correctly scaled subnormal or 0.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V exp(V x) {
    using T = element_t<V>;
    using c = constants<T>;
    const auto is_nan = x != x;
    // clamped into the range the reduction handles (a NaN too: its lanes compute e^clamp)
    x = select(x < V(c::exp_clamp), x, V(c::exp_clamp));
    x = select(x > V(-c::exp_clamp), x, V(-c::exp_clamp));
    ints_t<V> k{};
    V hi, lo, s, e;
    exp_reduced(x, k, hi, lo);
    fast_two_sum(V(1), hi, s, e);
    return select(is_nan, V(quiet_nan<T>()), scale(s + (e + lo), k));
}

/// e^y - 1 as a pair (hi + lo) for 0 <= y <= 2 tanh_one, to ~2^-(p+5) relative.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION void expm1_pair(V y, V& hi, V& lo) {
    ints_t<V> k{};
    V p_hi, p_lo, s, e;
    exp_reduced(y, k, p_hi, p_lo);
    const V two_k = pow2<V>(k);
    // 2^k (1 + p) - 1 = (2^k - 1) + 2^k p; 2^k - 1 is exact up to k = precision, and
    // where it is not (tanh = 1 - 2^-p or closer) its error cancels in E / (E + 2).
    two_sum(two_k - V(1), mul(p_hi, two_k), s, e);
    e = e + mul(p_lo, two_k);
    fast_two_sum(s, e, hi, lo);
}

/// (n_hi + n_lo) / (d_hi + d_lo) rounded, |d_lo| tiny against d_hi.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V divide_pairs(V n_hi, V n_lo, V d_hi, V d_lo) {
    const V q = div(n_hi, d_hi);
    V rem = fma(-q, d_hi, n_hi);  // exact
    rem = fma(-q, d_lo, rem + n_lo);
    return q + div(rem, d_hi);
}

/// tanh(x) = E / (E + 2) with E = e^(2|x|) - 1 carried as a pair, then the sign;
/// 1 past tanh_one, where tanh rounds to 1.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V tanh(V x) {
    using T = element_t<V>;
    const auto is_nan = x != x;
    const V a = abs(x);
    const auto below_one = a <= V(constants<T>::tanh_one);  // false for NaN
    const V y = select(below_one, a, V(0));  // the other lanes compute tanh 0, then give 1 or NaN
    V n_hi, n_lo, d_hi, d_lo;
    expm1_pair(y + y, n_hi, n_lo);
    two_sum(n_hi, V(2), d_hi, d_lo);
    d_lo = d_lo + n_lo;
    const V result = select(below_one, divide_pairs(n_hi, n_lo, d_hi, d_lo), V(1));
    return select(is_nan, V(quiet_nan<T>()), copysign(result, x));
}

/// 1 / (1 + e^-x), as 1 / (1 + E) for x >= 0 and E / (1 + E) for x < 0, E = e^-|x|
/// as a pair, so neither side loses accuracy nor overflows.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V sigmoid(V x) {
    using T = element_t<V>;
    using c = constants<T>;
    const auto is_nan = x != x;
    V m = -abs(x);
    m = select(m > V(-c::exp_clamp), m, V(-c::exp_clamp));  // a NaN too: replaced at the end
    ints_t<V> k{};
    V hi, lo, s, e;
    exp_reduced(m, k, hi, lo);
    fast_two_sum(V(1), hi, s, e);
    e = e + lo;
    const V e_hi = scale(s, k), e_lo = scale(e, k);  // E = e_hi + e_lo, in (0, 1]
    V d_hi, d_lo;
    fast_two_sum(V(1), e_hi, d_hi, d_lo);
    d_lo = d_lo + e_lo;
    const auto positive = x >= V(0);
    const V result = divide_pairs(select(positive, V(1), e_hi), select(positive, V(0), e_lo), d_hi, d_lo);
    return select(is_nan, V(quiet_nan<T>()), result);
}

// ---- log -----------------------------------------------------------------------------------

/// ln x: x = 2^k m, m in [√½, √2), f = m - 1 exact, s = f / (2 + f), and
/// log(1 + f) = f - f²/2 + s (f²/2 + R(s²)) (fdlibm's form) with R's Taylor
/// series 2 s^2j / (2j + 1); then k ln2 added in two parts. Special lanes (0, negative,
/// NaN, inf) compute log 1 or a finite stand-in and take their value at the end.
template <lane_type V>
DEVTENSOR_MATH_FUNCTION V log(V x) {
    using T = element_t<V>;
    using I = ints_t<V>;
    using c = constants<T>;
    constexpr int P = format<T>::precision;
    V y = select(x > V(0), x, V(1));  // 0, negatives and NaN compute log 1
    const auto subnormal = y < pow2<V>(format<T>::min_exponent);
    y = select(subnormal, mul(y, pow2<V>(P)), y);  // scaled into the normal range
    I k = select(subnormal, I(-P), I(0));
    const I iy = to_ints(y);
    const I tmp = iy - I(static_cast<typename format<T>::signed_bits>(c::sqrt_half_bits));
    k = k + (tmp >> (P - 1));
    const V m = from_ints<V>(iy - (tmp & -(I(1) << (P - 1))));  // in [√½, √2)
    const V f = m - V(1);
    const V s = div(f, V(2) + f);
    const V z = mul(s, s);
    V r;
    if constexpr (sizeof(T) == 4) {
        r = poly(z, 2.f / 3, 2.f / 5, 2.f / 7, 2.f / 9, 2.f / 11);
    } else {
        r = poly(z, 2. / 3, 2. / 5, 2. / 7, 2. / 9, 2. / 11, 2. / 13, 2. / 15, 2. / 17, 2. / 19, 2. / 21);
    }
    r = mul(z, r);
    const V hfsq = mul(mul(V(T(0.5)), f), f);
    const V kf = small_int_to_real<V>(k);
    const V t = fma(s, hfsq + r, mul(kf, V(c::ln2_lo)));
    V result = fma(kf, V(c::ln2_hi), -((hfsq - t) - f));  // k ln2_hi is exact
    result = select(x == V(infinity<T>()), x, result);
    result = select(x == V(0), V(-infinity<T>()), result);
    return select(x >= V(0), result, V(quiet_nan<T>()));  // negative or NaN
}
