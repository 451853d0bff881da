// What the tensor knows of autograd (autograd/graph.hpp defines it): its record's
// type, the test whether an op records, and the calls its view ops make.
#pragma once

#include <devtensor/config.hpp>
#include <devtensor/detail/op_checks.hpp>  // declares tensor

namespace devtensor::detail {
template <class T>
struct autograd_meta;  // autograd/graph.hpp
struct autograd_access;
/// A view whose backward sums (expand), for record_view.
struct sums_back {};
template <class... T, class... D>
bool recording(const tensor<T, D>&... in) noexcept;
DEVTENSOR_BEGIN_TU_NAMESPACE
template <class T, class D, class Redo>
void record_view(const tensor<T, D>& in, tensor<T, D>& out, const char* op, Redo redo);
template <class T, class D, class E>
void record_transfer(const tensor<T, D>& in, tensor<T, E>& out, const char* op);
DEVTENSOR_END_TU_NAMESPACE
}  // namespace devtensor::detail
