// Comparisons eq ne lt le gt ge (and == != < <= > >=), broadcasting, with scalars,
// giving tensor<bool>; and where(cond, a, b). NaN compares unequal to everything.
#pragma once

#include <devtensor/ops/entry_points.hpp>

#include <type_traits>

namespace devtensor {

namespace detail {
#define DEVTENSOR_DETAIL_COMPARISON(functor, sym)                                                  \
    struct functor {                                                                               \
        template <class T>                                                                         \
        DEVTENSOR_HOST_DEVICE bool operator()(T a, T b) const {                                    \
            return a sym b;                                                                        \
        }                                                                                          \
    };
DEVTENSOR_DETAIL_COMPARISON(equal_to, ==)
DEVTENSOR_DETAIL_COMPARISON(not_equal_to, !=)
DEVTENSOR_DETAIL_COMPARISON(less, <)
DEVTENSOR_DETAIL_COMPARISON(less_equal, <=)
DEVTENSOR_DETAIL_COMPARISON(greater, >)
DEVTENSOR_DETAIL_COMPARISON(greater_equal, >=)
#undef DEVTENSOR_DETAIL_COMPARISON

/// cond ? a : b.
struct choose {
    template <class T>
    DEVTENSOR_HOST_DEVICE T operator()(bool cond, T a, T b) const {
        return cond ? a : b;
    }
};
}  // namespace detail

DEVTENSOR_BEGIN_TU_NAMESPACE

DEVTENSOR_BINARY_OP(eq, detail::equal_to, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP(ne, detail::not_equal_to, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP(lt, detail::less, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP(le, detail::less_equal, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP(gt, detail::greater, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OP(ge, detail::greater_equal, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(==, detail::equal_to, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(!=, detail::not_equal_to, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(<, detail::less, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(<=, detail::less_equal, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(>, detail::greater, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)
DEVTENSOR_BINARY_OPERATOR(>=, detail::greater_equal, detail::bool_element, DEVTENSOR_NO_TYPE_CHECK)

/// cond ? a : b elementwise, the three broadcast together (torch.where).
template <class DC, class TA, class DA, class TB, class DB>
[[nodiscard]] tensor<TA, detail::common_device_t<DA, DB>> where(const tensor<bool, DC>& cond, const tensor<TA, DA>& a,
                                                                const tensor<TB, DB>& b,
                                                                call_site site = call_site::current()) {
    DEVTENSOR_STATIC_CHECK_BINARY("where", TA, DA, TB, DB);
    DEVTENSOR_STATIC_CHECK_SAME_DEVICE("where", DC, DA);
    DEVTENSOR_STATIC_CHECK_KERNELS("where", DC);
    return detail::map_new<TA>({"where", site}, detail::choose{}, cond, a, b);
}

DEVTENSOR_END_TU_NAMESPACE

}  // namespace devtensor
