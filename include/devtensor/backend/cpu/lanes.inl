// The lane family of one x86 ISA for detail/math_lanes.inl: a register of float or
// double (real_lanes), one of the signed integers of the same width (int_lanes),
// and a comparison's result (mask_lanes), with the operations that text names.
// math_lanes.hpp includes this file once per ISA, with DEVTENSOR_ISA_FUNCTION (the
// ISA's target attribute, always_inline and `inline`) and DEVTENSOR_ISA_BYTES (the
// register width).
// Arithmetic is GCC's vector extensions; fma, streaming stores and the product kept
// apart from later sums are what the extensions do not say.
// No include guard: included once per ISA, by math_lanes.hpp only.

/// E's vector of DEVTENSOR_ISA_BYTES (GCC ignores vector_size on a dependent type).
template <class E>
struct native;
template <>
struct native<float> {
    typedef float type __attribute__((vector_size(DEVTENSOR_ISA_BYTES)));
};
template <>
struct native<double> {
    typedef double type __attribute__((vector_size(DEVTENSOR_ISA_BYTES)));
};
template <>
struct native<std::int32_t> {
    typedef std::int32_t type __attribute__((vector_size(DEVTENSOR_ISA_BYTES)));
};
template <>
struct native<std::int64_t> {
    typedef std::int64_t type __attribute__((vector_size(DEVTENSOR_ISA_BYTES)));
};

/// a * b + c rounded once, and the non-temporal store: this ISA's instructions.
#if DEVTENSOR_ISA_BYTES == 32
DEVTENSOR_ISA_FUNCTION __m256 fused_multiply_add(__m256 a, __m256 b, __m256 c) { return _mm256_fmadd_ps(a, b, c); }
DEVTENSOR_ISA_FUNCTION __m256d fused_multiply_add(__m256d a, __m256d b, __m256d c) { return _mm256_fmadd_pd(a, b, c); }
DEVTENSOR_ISA_FUNCTION void stream_store(float* p, __m256 v) { _mm256_stream_ps(p, v); }
DEVTENSOR_ISA_FUNCTION void stream_store(double* p, __m256d v) { _mm256_stream_pd(p, v); }
#else
DEVTENSOR_ISA_FUNCTION __m512 fused_multiply_add(__m512 a, __m512 b, __m512 c) { return _mm512_fmadd_ps(a, b, c); }
DEVTENSOR_ISA_FUNCTION __m512d fused_multiply_add(__m512d a, __m512d b, __m512d c) { return _mm512_fmadd_pd(a, b, c); }
DEVTENSOR_ISA_FUNCTION void stream_store(float* p, __m512 v) { _mm512_stream_ps(p, v); }
DEVTENSOR_ISA_FUNCTION void stream_store(double* p, __m512d v) { _mm512_stream_pd(p, v); }
#endif

template <class T>
using signed_bits_t = typename format<T>::signed_bits;

/// Where a comparison of real_lanes<T> holds: all ones in those lanes.
template <class T>
struct mask_lanes {
    typename native<signed_bits_t<T>>::type bits;
};

/// Signed integers of T's width, one per lane of real_lanes<T>; they wrap.
template <class T>
struct int_lanes {
    using element = signed_bits_t<T>;
    using type = typename native<element>::type;
    type v;

    int_lanes() = default;
    DEVTENSOR_ISA_FUNCTION int_lanes(element x) : v(type{} + x) {}  // every lane x
    DEVTENSOR_ISA_FUNCTION explicit int_lanes(type x) : v(x) {}

    DEVTENSOR_ISA_FUNCTION friend int_lanes operator+(int_lanes a, int_lanes b) { return int_lanes(a.v + b.v); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator-(int_lanes a, int_lanes b) { return int_lanes(a.v - b.v); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator-(int_lanes a) { return int_lanes(-a.v); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator/(int_lanes a, element b) { return int_lanes(a.v / b); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator&(int_lanes a, int_lanes b) { return int_lanes(a.v & b.v); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator|(int_lanes a, int_lanes b) { return int_lanes(a.v | b.v); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator~(int_lanes a) { return int_lanes(~a.v); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator<<(int_lanes a, int n) { return int_lanes(a.v << n); }
    /// Arithmetic (the sign bit shifted in).
    DEVTENSOR_ISA_FUNCTION friend int_lanes operator>>(int_lanes a, int n) { return int_lanes(a.v >> n); }
    DEVTENSOR_ISA_FUNCTION friend int_lanes select(mask_lanes<T> m, int_lanes a, int_lanes b) {
        return int_lanes(m.bits ? a.v : b.v);
    }
};

/// `lanes` values of T (float or double) in one register.
template <class T>
struct real_lanes {
    using element = T;
    using type = typename native<T>::type;
    static constexpr int lanes = DEVTENSOR_ISA_BYTES / static_cast<int>(sizeof(T));
    type v;

    real_lanes() = default;
    DEVTENSOR_ISA_FUNCTION real_lanes(T x) : v(type{} + x) {}  // every lane x
    /// Every lane static_cast<T>(x): what `V(x)` means for a scalar V.
    template <class S>
        requires(std::is_arithmetic_v<S> && !std::is_same_v<S, T>)
    DEVTENSOR_ISA_FUNCTION explicit real_lanes(S x) : real_lanes(static_cast<T>(x)) {}
    DEVTENSOR_ISA_FUNCTION explicit real_lanes(type x) : v(x) {}

    DEVTENSOR_ISA_FUNCTION static real_lanes load(const T* p) {
        real_lanes r;
        __builtin_memcpy(&r.v, p, sizeof r.v);
        return r;
    }
    DEVTENSOR_ISA_FUNCTION void store(T* p) const { __builtin_memcpy(p, &v, sizeof v); }
    /// Past the caches, straight to memory; p aligned to the register width.
    DEVTENSOR_ISA_FUNCTION void stream(T* p) const { stream_store(p, v); }

    DEVTENSOR_ISA_FUNCTION friend real_lanes operator+(real_lanes a, real_lanes b) { return real_lanes(a.v + b.v); }
    DEVTENSOR_ISA_FUNCTION friend real_lanes operator-(real_lanes a, real_lanes b) { return real_lanes(a.v - b.v); }
    DEVTENSOR_ISA_FUNCTION friend real_lanes operator-(real_lanes a) { return real_lanes(-a.v); }
    DEVTENSOR_ISA_FUNCTION friend real_lanes div(real_lanes a, real_lanes b) { return real_lanes(a.v / b.v); }
    /// a * b rounded, never fused with a later addition: the product passes through an
    /// empty asm, as detail::mul's does.
    DEVTENSOR_ISA_FUNCTION friend real_lanes mul(real_lanes a, real_lanes b) {
        type product = a.v * b.v;
        __asm__("" : "+v"(product));
        return real_lanes(product);
    }
    /// a * b + c rounded once.
    DEVTENSOR_ISA_FUNCTION friend real_lanes fma(real_lanes a, real_lanes b, real_lanes c) {
        return real_lanes(fused_multiply_add(a.v, b.v, c.v));
    }

    DEVTENSOR_ISA_FUNCTION friend mask_lanes<T> operator<(real_lanes a, real_lanes b) { return {a.v < b.v}; }
    DEVTENSOR_ISA_FUNCTION friend mask_lanes<T> operator>(real_lanes a, real_lanes b) { return {a.v > b.v}; }
    DEVTENSOR_ISA_FUNCTION friend mask_lanes<T> operator<=(real_lanes a, real_lanes b) { return {a.v <= b.v}; }
    DEVTENSOR_ISA_FUNCTION friend mask_lanes<T> operator>=(real_lanes a, real_lanes b) { return {a.v >= b.v}; }
    DEVTENSOR_ISA_FUNCTION friend mask_lanes<T> operator==(real_lanes a, real_lanes b) { return {a.v == b.v}; }
    DEVTENSOR_ISA_FUNCTION friend mask_lanes<T> operator!=(real_lanes a, real_lanes b) { return {a.v != b.v}; }
    DEVTENSOR_ISA_FUNCTION friend real_lanes select(mask_lanes<T> m, real_lanes a, real_lanes b) {
        return real_lanes(m.bits ? a.v : b.v);
    }

    /// The bits of each lane as T's signed integer, and back.
    DEVTENSOR_ISA_FUNCTION friend int_lanes<T> to_ints(real_lanes x) {
        return int_lanes<T>(__builtin_bit_cast(typename int_lanes<T>::type, x.v));
    }
};

template <class V>
DEVTENSOR_ISA_FUNCTION V from_ints(int_lanes<typename V::element> i) {
    return V(__builtin_bit_cast(typename V::type, i.v));
}

// ---- the family's names for math_lanes.inl --------------------------------------------------

template <class V>
concept lane_type = std::is_same_v<V, real_lanes<float>> || std::is_same_v<V, real_lanes<double>>;
template <lane_type V>
using element_t = typename V::element;
template <lane_type V>
using ints_t = int_lanes<typename V::element>;
