// data::tensor_dataset and data::loader: minibatches of rows from tensors that
// share their first dimension (torch.utils.data's TensorDataset and DataLoader),
// in order or shuffled by a Fisher–Yates permutation drawn from a Philox
// generator, so the order depends on the generator's (seed, offset) alone: the
// same on every machine, compiler and thread count.
#pragma once

#include <devtensor/config.hpp>       // detail::tu_tag
#include <devtensor/error.hpp>
#include <devtensor/ops/gather.hpp>   // index_select: the rows of a shuffled batch
#include <devtensor/random.hpp>       // generator, philox4x32_10_inplace, mul_high64
#include <devtensor/tensor.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace devtensor::data {

/// Tensors whose rows (dimension 0) are the samples: row i of every tensor is sample i.
/// Holds handles, so copying a dataset copies no data.
template <class... Tensors>
class tensor_dataset {
    static_assert(sizeof...(Tensors) >= 1, "devtensor::data::tensor_dataset: needs at least one tensor");
    static_assert((is_tensor_v<Tensors> && ...),
                  "devtensor::data::tensor_dataset: every argument must be a devtensor::tensor");

public:
    /// Throws error for an undefined tensor, shape_error for a 0-dim one or for
    /// tensors with different numbers of rows.
    explicit tensor_dataset(Tensors... tensors) : tensors_(std::move(tensors)...) {
        std::size_t i = 0;
        std::string first_shape;
        const auto check = [&](const auto& t) {
            const std::string which = "tensor " + std::to_string(i);
            if (!t.defined())
                throw error("devtensor::data::tensor_dataset: " + which +
                            " is an undefined tensor (default-constructed or moved-from)");
            if (t.dim() == 0)
                throw shape_error("devtensor::data::tensor_dataset: " + which +
                                  " is 0-dim (shape []); samples are rows, so it needs at least one dimension");
            if (i == 0) {
                rows_ = t.size(0);
                first_shape = t.shape().to_string();
            } else if (t.size(0) != rows_) {
                throw shape_error("devtensor::data::tensor_dataset: size mismatch between tensors: tensor 0 has shape " +
                                  first_shape + " but " + which + " has shape " + t.shape().to_string() +
                                  "; every tensor needs the same size(0)");
            }
            ++i;
        };
        std::apply([&](const auto&... t) { (check(t), ...); }, tensors_);
    }

    /// The number of samples: size(0) of every tensor.
    std::int64_t size() const noexcept { return rows_; }
    const std::tuple<Tensors...>& tensors() const noexcept { return tensors_; }

private:
    std::tuple<Tensors...> tensors_;
    std::int64_t rows_ = 0;
};

/// How a loader cuts an epoch into batches.
struct loader_options {
    std::int64_t batch_size = 64;  ///< rows per batch, > 0 (PyTorch's default is 1)
    bool shuffle = false;          ///< a new random order each epoch
    bool drop_last = false;        ///< drop the last batch when it has fewer than batch_size rows
};

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// An integer uniform in [0, range), range >= 1, from 64-bit draws: Lemire's
/// multiply-shift (the high half of u * range), redrawing when the low half falls
/// below 2^64 mod range, the products that would make some values likelier. So
/// it is exactly uniform, and a redraw has a chance under range / 2^64.
template <class Draw>
std::uint64_t uniform_below(Draw&& draw, std::uint64_t range) {
    std::uint64_t u = draw();
    if (u * range < range) {  // only then can the low half be under the threshold
        const std::uint64_t threshold = (std::uint64_t{0} - range) % range;  // 2^64 mod range
        while (u * range < threshold) u = draw();
    }
    return devtensor::detail::mul_high64(u, range);
}

/// The 64-bit numbers of one shuffle: the generator hands the shuffle one Philox
/// block b, and number m is words (2m mod 4, 2m + 1 mod 4) (high, low) of
/// Philox(counter = (b, m / 2), key = seed). Random ops use counters (block, 0)
/// only, so the shuffle owns this stream however long it runs (redraws included),
/// and any shuffle advances the generator by one block.
class philox_stream {
public:
    philox_stream(std::uint64_t seed, std::uint64_t block) noexcept : seed_(seed), block_(block) {}

    std::uint64_t operator()() noexcept {
        if (next_ == 4) {
            words_[0] = static_cast<std::uint32_t>(block_);
            words_[1] = static_cast<std::uint32_t>(block_ >> 32);
            words_[2] = static_cast<std::uint32_t>(sub_block_);
            words_[3] = static_cast<std::uint32_t>(sub_block_ >> 32);
            ++sub_block_;
            devtensor::detail::philox4x32_10_inplace(words_, static_cast<std::uint32_t>(seed_),
                                                     static_cast<std::uint32_t>(seed_ >> 32));
            next_ = 0;
        }
        const std::uint64_t value = static_cast<std::uint64_t>(words_[next_]) << 32 | words_[next_ + 1];
        next_ += 2;
        return value;
    }

private:
    std::uint64_t seed_, block_, sub_block_ = 0;
    std::uint32_t words_[4] = {};
    std::size_t next_ = 4;
};

/// A permutation of 0 ... rows - 1 from `gen` (one block of it): Fisher–Yates,
/// swapping each position i from the end with a uniform j in [0, i].
inline std::vector<std::int64_t> random_order(std::int64_t rows, generator& gen) {
    std::vector<std::int64_t> order(static_cast<std::size_t>(rows));
    std::iota(order.begin(), order.end(), std::int64_t{0});
    philox_stream draw(gen.seed(), gen.reserve_blocks(4));
    for (std::size_t i = order.size(); i-- > 1;)
        std::swap(order[i], order[static_cast<std::size_t>(uniform_below(draw, i + 1))]);
    return order;
}

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

/// A random permutation of 0 ... n - 1 drawn from `gen` (torch.randperm), by the
/// loader's shuffle: the same order on every machine for the same seed.
inline tensor<std::int64_t, cpu_device> randperm(std::int64_t n, generator& gen) {
    if (n < 0) throw error("devtensor::data::randperm: n must be >= 0, got " + std::to_string(n));
    const std::vector<std::int64_t> order = detail::random_order(n, gen);
    return from_values<std::int64_t>(order, {n});
}

/// Batches of a tensor_dataset, one epoch per begin(): a std::tuple of tensors,
/// rows [i * batch_size, (i + 1) * batch_size) of each dataset tensor in this
/// epoch's order, on the dataset tensors' devices.
/// `for (auto [X, y] : data::loader(dataset, {.batch_size = 64, .shuffle = true}))`.
/// In order, a batch is a narrow() view (no copy); shuffled, index_select's copy.
/// The shuffle draws from `gen`, by default the CPU's default generator (as
/// PyTorch's sampler), which must outlive the loader.
template <class... Tensors>
class loader {
public:
    using batch = std::tuple<Tensors...>;

    /// Throws error when options.batch_size <= 0.
    loader(tensor_dataset<Tensors...> dataset, loader_options options = {},
           generator& gen = default_generator(device()), call_site site = call_site::current())
        : dataset_(std::move(dataset)), options_(options), gen_(&gen), site_(site) {
        if (options_.batch_size <= 0)
            throw error("devtensor::data::loader: batch_size must be a positive number of rows, but got " +
                        std::to_string(options_.batch_size));
    }

    /// Batches per epoch; the last, partial one counts unless drop_last.
    std::int64_t size() const noexcept {
        const std::int64_t rows = dataset_.size(), bs = options_.batch_size;
        return rows / bs + (!options_.drop_last && rows % bs != 0 ? 1 : 0);  // no overflow for a huge bs
    }

    class iterator;

    /// Starts an epoch: when shuffling, draws its order from the generator (advancing it).
    template <class Tu = devtensor::detail::tu_tag>
    iterator begin() {
        auto e = std::make_shared<epoch>(
            epoch{dataset_.tensors(), {}, dataset_.size(), options_.batch_size, size(), site_});
        if (options_.shuffle) {
            // drawn on the host, then one copy per tensor to its device (none on the CPU)
            const std::vector<std::int64_t> order = detail::random_order(e->rows, *gen_);
            const auto host = from_values<std::int64_t>(order, shape{e->rows}, cpu_device{}, site_);
            std::apply([&](auto&... index) {
                std::apply([&](const auto&... t) { ((index = host.to(t.device(), site_)), ...); }, e->tensors);
            }, e->order);
        }
        return iterator(std::move(e));
    }
    std::default_sentinel_t end() const noexcept { return {}; }

private:
    /// What an epoch's iterators share: the tensors, and their order when shuffled
    /// (one int64 index per tensor, on that tensor's device; undefined in order).
    struct epoch {
        std::tuple<Tensors...> tensors;
        std::tuple<tensor<std::int64_t, typename Tensors::device_type>...> order;
        std::int64_t rows, batch_size, batches;
        call_site site;
    };

    tensor_dataset<Tensors...> dataset_;
    loader_options options_;
    generator* gen_;
    call_site site_;  ///< where the loader was made: the origin of its batches

public:
    /// An input iterator over one epoch's batches; end() is std::default_sentinel.
    class iterator {
    public:
        using value_type = batch;
        using difference_type = std::ptrdiff_t;
        using iterator_concept = std::input_iterator_tag;

        iterator() = default;

        /// The current batch, made when asked for.
        template <class Tu = devtensor::detail::tu_tag>
        batch operator*() const {
            const std::int64_t start = index_ * epoch_->batch_size;
            const std::int64_t length = std::min(epoch_->batch_size, epoch_->rows - start);
            return std::apply([&](const auto&... t) {
                return std::apply([&](const auto&... index) { return batch{rows<Tu>(t, index, start, length)...}; },
                                  epoch_->order);
            }, epoch_->tensors);
        }
        iterator& operator++() noexcept {
            ++index_;
            return *this;
        }
        void operator++(int) noexcept { ++index_; }
        friend bool operator==(const iterator& it, std::default_sentinel_t) noexcept {
            return it.epoch_ == nullptr || it.index_ >= it.epoch_->batches;
        }

    private:
        friend class loader;
        explicit iterator(std::shared_ptr<const epoch> e) noexcept : epoch_(std::move(e)) {}

        /// Rows start ... start + length - 1 of the epoch's order of `t`.
        template <class Tu, class T, class D>
        tensor<T, D> rows(const tensor<T, D>& t, const tensor<std::int64_t, D>& order, std::int64_t start,
                          std::int64_t length) const {
            if (!order.defined()) return t.narrow(0, start, length, epoch_->site);
            return index_select(t, 0, order.narrow(0, start, length, epoch_->site), epoch_->site);
        }

        std::shared_ptr<const epoch> epoch_;
        std::int64_t index_ = 0;
    };
};

}  // namespace devtensor::data
