// A row of an elementwise op on this ISA's registers: the lane forms of the math
// functions (math_lanes.inl on this ISA's family) and the loop that runs a functor's
// lane form over a contiguous row.
// No include guard: included once per ISA, by math_lanes.hpp only, after lanes.inl
// and detail/math_lanes.inl; DEVTENSOR_ISA_TARGET is the ISA's target attribute alone.

/// math_lanes.inl's functions on this ISA's registers, as function objects: the
/// `Functions` of a functor's `lane_form<Functions>` (ops/unary_math.hpp).
struct math_functions {
#  define DEVTENSOR_LANE_FUNCTION(fn)                                               \
    struct fn {                                                                     \
        template <lane_type V>                                                      \
        DEVTENSOR_ISA_FUNCTION V operator()(V x) const {                            \
            return lane_math::fn(x);                                                \
        }                                                                           \
    };
    DEVTENSOR_LANE_FUNCTION(exp)
    DEVTENSOR_LANE_FUNCTION(log)
    DEVTENSOR_LANE_FUNCTION(tanh)
    DEVTENSOR_LANE_FUNCTION(sigmoid)
#  undef DEVTENSOR_LANE_FUNCTION
};

/// out[i] = f(in[i]) for i < n, both contiguous: the functor's lane form from the
/// first output element aligned to the register width on, its scalar form before
/// and in the tail (the same bits). With `stream`, non-temporal stores (the caller
/// fences them).
template <class F, class T>
DEVTENSOR_ISA_TARGET inline void map_row(const F& f, std::int64_t n, bool stream, T* out, const T* in) {
    using V = real_lanes<T>;
    const typename F::template lane_form<math_functions> lane_form;
    constexpr auto width = static_cast<std::uintptr_t>(DEVTENSOR_ISA_BYTES);
    std::int64_t i = 0;
    for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % width != 0; ++i) out[i] = f(in[i]);
    if (stream) {
        for (; i + V::lanes <= n; i += V::lanes) lane_form(V::load(in + i)).stream(out + i);
    } else {
        for (; i + V::lanes <= n; i += V::lanes) lane_form(V::load(in + i)).store(out + i);
    }
    for (; i < n; ++i) out[i] = f(in[i]);
}
