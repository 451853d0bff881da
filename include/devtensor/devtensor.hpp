// The umbrella header: everything public in devtensor.
#pragma once

#include <devtensor/buffer.hpp>
#include <devtensor/config.hpp>
#include <devtensor/device.hpp>
#include <devtensor/device_query.hpp>
#include <devtensor/element.hpp>
#include <devtensor/error.hpp>
#include <devtensor/format.hpp>
#include <devtensor/memory.hpp>
#include <devtensor/random.hpp>
#include <devtensor/shape.hpp>
#include <devtensor/stream.hpp>
#include <devtensor/tensor.hpp>
#include <devtensor/threads.hpp>
#include <devtensor/version.hpp>
#include <devtensor/ops/add.hpp>
#include <devtensor/ops/fill.hpp>
#include <devtensor/ops/linear.hpp>
#include <devtensor/ops/matmul.hpp>
#include <devtensor/ops/mul.hpp>
#include <devtensor/ops/random.hpp>
#include <devtensor/ops/relu.hpp>
#include <devtensor/ops/sum.hpp>
#include <devtensor/ops/factories.hpp>
#include <devtensor/nn/linear.hpp>
#include <devtensor/nn/sequential.hpp>
