// Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11), the
// generator state (seed, offset), and the maps from Philox words to uniform,
// normal (Box–Muller) and integer values.
// Element i of every random op depends only on (seed, offset, i), so the CPU,
// any GPU and any thread count give bit-identical results.
#pragma once

#include <devtensor/config.hpp>  // DEVTENSOR_HOST_DEVICE
#include <devtensor/detail/arith.hpp>
#include <devtensor/detail/math.hpp>  // log, sqrt, sincos_2pi for Box–Muller
#include <devtensor/detail/per_device.hpp>
#include <devtensor/device.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace devtensor {

namespace detail {
DEVTENSOR_BEGIN_TU_NAMESPACE

/// One Philox4x32-10 evaluation in place: 10 rounds, the key bumped between rounds.
DEVTENSOR_HOST_DEVICE inline void philox4x32_10_inplace(std::uint32_t (&ctr)[4], std::uint32_t k0,
                                                        std::uint32_t k1) {
    constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;  // multipliers
    constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;  // Weyl key increments
    for (int round = 0; round < 10; ++round) {
        const std::uint64_t p0 = static_cast<std::uint64_t>(m0) * ctr[0];
        const std::uint64_t p1 = static_cast<std::uint64_t>(m1) * ctr[2];
        const auto hi0 = static_cast<std::uint32_t>(p0 >> 32), lo0 = static_cast<std::uint32_t>(p0);
        const auto hi1 = static_cast<std::uint32_t>(p1 >> 32), lo1 = static_cast<std::uint32_t>(p1);
        ctr[0] = hi1 ^ ctr[1] ^ k0;
        ctr[1] = lo1;
        ctr[2] = hi0 ^ ctr[3] ^ k1;
        ctr[3] = lo0;
        k0 += w0;
        k1 += w1;
    }
}

/// 24 random bits to a float in [0, 1): every value a multiple of 2^-24.
DEVTENSOR_HOST_DEVICE inline float uniform_float(std::uint32_t bits) {
    return detail::mul(static_cast<float>(bits >> 8), 0x1p-24f);  // exact; .rn in PTX
}

/// 53 random bits from two words to a double in [0, 1).
DEVTENSOR_HOST_DEVICE inline double uniform_double(std::uint32_t hi, std::uint32_t lo) {
    const std::uint64_t bits = (static_cast<std::uint64_t>(hi) << 32 | lo) >> 11;
    return detail::mul(static_cast<double>(bits), 0x1p-53);
}

/// Philox numbers one element of T consumes: 1 for float, 2 for double.
template <class T>
inline constexpr int philox_words_per_element = sizeof(T) > 4 ? 2 : 1;

/// Elements of T one Philox evaluation yields.
template <class T>
inline constexpr int elements_per_philox_block = 4 / philox_words_per_element<T>;

/// Philox block `block` of the stream of key `seed`: counter = (block, 0), the 4 words in place.
DEVTENSOR_HOST_DEVICE inline void philox_block(std::uint64_t seed, std::uint64_t block, std::uint32_t (&ctr)[4]) {
    ctr[0] = static_cast<std::uint32_t>(block);
    ctr[1] = static_cast<std::uint32_t>(block >> 32);
    ctr[2] = ctr[3] = 0u;
    philox4x32_10_inplace(ctr, static_cast<std::uint32_t>(seed), static_cast<std::uint32_t>(seed >> 32));
}

/// The E = elements_per_philox_block<T> uniform [0, 1) values of Philox block
/// `block` (counter = block, key = seed): the one place both backends turn
/// (seed, offset, i) into element i.
template <class T>
DEVTENSOR_HOST_DEVICE inline void uniform_values(std::uint64_t seed, std::uint64_t block,
                                                 T (&values)[elements_per_philox_block<T>]) {
    std::uint32_t ctr[4];
    philox_block(seed, block, ctr);
    for (int e = 0; e < elements_per_philox_block<T>; ++e) {
        if constexpr (elements_per_philox_block<T> == 4) values[e] = static_cast<T>(uniform_float(ctr[e]));
        else values[e] = static_cast<T>(uniform_double(ctr[2 * e], ctr[2 * e + 1]));
    }
}

/// A distribution on the Philox stream, the one thing rand, randn and randint
/// differ in: `per_block<T>` values of T from each Philox block, and
/// `words_per_element<T>` Philox numbers reserved per element (per_block<T> *
/// words_per_element<T> == 4). uniform_distribution below is the model.
/// rand: uniform [0, 1) values (uniform_values).
struct uniform_distribution {
    template <class T>
    static constexpr int per_block = elements_per_philox_block<T>;
    template <class T>
    static constexpr int words_per_element = philox_words_per_element<T>;
    /// The per_block<T> values of Philox block `block` of the stream of key `seed`.
    template <class T>
    DEVTENSOR_HOST_DEVICE void operator()(std::uint64_t seed, std::uint64_t block, T (&values)[per_block<T>]) const {
        uniform_values(seed, block, values);
    }
};

/// Writes the elements of block `q` of a fill of `n` elements from `dist`:
/// elements [q*E, q*E + E) ∩ [0, n), E = Dist::per_block<T>, from Philox block first_block + q.
template <class Dist, class T>
DEVTENSOR_HOST_DEVICE inline void philox_fill_block(const Dist& dist, T* out, std::int64_t n, std::uint64_t seed,
                                                    std::uint64_t first_block, std::int64_t q) {
    constexpr int per_block = Dist::template per_block<T>;
    T values[static_cast<std::size_t>(per_block)];
    dist(seed, first_block + static_cast<std::uint64_t>(q), values);
    const std::int64_t first = q * per_block;
    for (int e = 0; e < per_block && first + e < n; ++e) out[first + e] = values[e];
}

/// philox_fill_block of the uniform distribution (rand).
template <class T>
DEVTENSOR_HOST_DEVICE inline void uniform_block(T* out, std::int64_t n, std::uint64_t seed,
                                                std::uint64_t first_block, std::int64_t q) {
    philox_fill_block(uniform_distribution{}, out, n, seed, first_block, q);
}

// ---- randn ---------------------------------------------------------------------------------

/// 24 random bits to a float in (0, 1]: 0 never comes, so its log is finite.
DEVTENSOR_HOST_DEVICE inline float uniform_float_above_zero(std::uint32_t bits) {
    return detail::mul(static_cast<float>((bits >> 8) + 1u), 0x1p-24f);
}

/// 53 random bits from two words to a double in (0, 1].
DEVTENSOR_HOST_DEVICE inline double uniform_double_above_zero(std::uint32_t hi, std::uint32_t lo) {
    const std::uint64_t bits = (static_cast<std::uint64_t>(hi) << 32 | lo) >> 11;
    return detail::mul(static_cast<double>(bits + 1u), 0x1p-53);
}

/// Box–Muller: two standard normals from u1 in (0, 1] and u2 in [0, 1),
/// z0 = r cos 2πu2, z1 = r sin 2πu2, r = sqrt(-2 ln u1), all from detail::math
/// (the same bits on every device). |z| < 5.8 for float, < 8.6 for double.
template <class T>
DEVTENSOR_HOST_DEVICE inline void box_muller(T u1, T u2, T& z0, T& z1) {
    const T r = math::sqrt(detail::mul(T(-2), math::log(u1)));
    T s, c;
    math::sincos_2pi(u2, s, c);
    z0 = detail::mul(r, c);
    z1 = detail::mul(r, s);
}

/// The E = elements_per_philox_block<T> standard normal values of Philox block
/// `block`, 16 bytes as for rand: float takes words (0, 1) and (2, 3) as two
/// (u1, u2) pairs, 4 normals; double takes words 0-1 as u1 and 2-3 as u2, 2 normals.
template <class T>
DEVTENSOR_HOST_DEVICE inline void normal_values(std::uint64_t seed, std::uint64_t block,
                                                T (&values)[elements_per_philox_block<T>]) {
    std::uint32_t ctr[4];
    philox_block(seed, block, ctr);
    if constexpr (elements_per_philox_block<T> == 4) {
        for (int pair = 0; pair < 2; ++pair)
            box_muller(uniform_float_above_zero(ctr[2 * pair]), uniform_float(ctr[2 * pair + 1]),
                       values[2 * pair], values[2 * pair + 1]);
    } else {
        box_muller(uniform_double_above_zero(ctr[0], ctr[1]), uniform_double(ctr[2], ctr[3]), values[0],
                   values[1]);
    }
}

/// randn: standard normal values (normal_values).
struct normal_distribution {
    template <class T>
    static constexpr int per_block = elements_per_philox_block<T>;
    template <class T>
    static constexpr int words_per_element = philox_words_per_element<T>;
    template <class T>
    DEVTENSOR_HOST_DEVICE void operator()(std::uint64_t seed, std::uint64_t block, T (&values)[per_block<T>]) const {
        normal_values(seed, block, values);
    }
};

// ---- randint -------------------------------------------------------------------------------

/// Elements of randint one Philox block yields, whatever the type: each takes
/// two words (64 bits), so the bias of the map below is under range / 2^64.
inline constexpr int randint_per_philox_block = 2;

/// The high 64 bits of a * b, from 32-bit pieces (the same on every device).
DEVTENSOR_HOST_DEVICE inline std::uint64_t mul_high64(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t a_lo = a & 0xFFFFFFFFu, a_hi = a >> 32, b_lo = b & 0xFFFFFFFFu, b_hi = b >> 32;
    const std::uint64_t p0 = a_lo * b_lo, p1 = a_lo * b_hi, p2 = a_hi * b_lo, p3 = a_hi * b_hi;
    const std::uint64_t mid = (p0 >> 32) + (p1 & 0xFFFFFFFFu) + (p2 & 0xFFFFFFFFu);
    return p3 + (p1 >> 32) + (p2 >> 32) + (mid >> 32);
}

/// low + floor(u range / 2^64) for the 64 random bits u = hi:lo: an integer in
/// [low, low + range), range >= 1 (as uint64, so any int64 low < high fits).
template <class T>
DEVTENSOR_HOST_DEVICE inline T randint_value(std::uint32_t hi, std::uint32_t lo, std::int64_t low,
                                             std::uint64_t range) {
    const std::uint64_t u = static_cast<std::uint64_t>(hi) << 32 | lo;
    const auto v = static_cast<std::int64_t>(static_cast<std::uint64_t>(low) + mul_high64(u, range));
    return static_cast<T>(v);  // in T's range: randint checks [low, high) fits T
}

/// randint: integers in [low, low + range) (randint_value), two words each, whatever T.
struct randint_distribution {
    std::int64_t low;
    std::uint64_t range;  ///< >= 1
    template <class T>
    static constexpr int per_block = randint_per_philox_block;
    template <class T>
    static constexpr int words_per_element = 4 / randint_per_philox_block;
    template <class T>
    DEVTENSOR_HOST_DEVICE void operator()(std::uint64_t seed, std::uint64_t block, T (&values)[per_block<T>]) const {
        std::uint32_t ctr[4];
        philox_block(seed, block, ctr);
        for (int e = 0; e < randint_per_philox_block; ++e)
            values[e] = randint_value<T>(ctr[2 * e], ctr[2 * e + 1], low, range);
    }
};

DEVTENSOR_END_TU_NAMESPACE
}  // namespace detail

/// The Philox4x32-10 bijection, bit for bit the published algorithm (Random123's philox4x32).
/// One type in every translation unit; `Tu` keeps each kind's call its own (config.hpp).
struct philox4x32_10 {
    using counter_type = std::array<std::uint32_t, 4>;
    using key_type = std::array<std::uint32_t, 2>;

    template <class Tu = detail::tu_tag>
    counter_type operator()(counter_type counter, key_type key) const {
        std::uint32_t c[4] = {counter[0], counter[1], counter[2], counter[3]};
        detail::philox4x32_10_inplace(c, key[0], key[1]);
        return {c[0], c[1], c[2], c[3]};
    }
};

/// PyTorch's default seed, so an unseeded program starts where torch does (not the same stream).
inline constexpr std::uint64_t default_seed = 67280421310721ull;

/// Generator state: the Philox key (= seed) and an offset, counted in Philox
/// numbers, that advances as random ops consume them. Reservations are atomic,
/// so ops drawing from one generator on several threads get disjoint streams.
class generator {
public:
    explicit generator(std::uint64_t seed = default_seed) noexcept : seed_(seed) {}
    generator(const generator& other) noexcept : seed_(other.seed()), offset_(other.offset()) {}
    generator& operator=(const generator& other) noexcept {
        seed_.store(other.seed());
        offset_.store(other.offset());
        return *this;
    }

    /// Restarts the stream: this seed, offset 0.
    void manual_seed(std::uint64_t seed) noexcept {
        seed_.store(seed);
        offset_.store(0);
    }
    std::uint64_t seed() const noexcept { return seed_.load(); }
    std::uint64_t offset() const noexcept { return offset_.load(); }
    /// Moves the stream to `offset`, rounded up to whole Philox blocks of 4 numbers.
    void set_offset(std::uint64_t offset) noexcept { offset_.store((offset + 3) / 4 * 4); }

    /// Claims `count` numbers (rounded up to whole blocks of 4) and returns the
    /// index of the first Philox block they start at.
    std::uint64_t reserve_blocks(std::uint64_t count) noexcept {
        const std::uint64_t rounded = (count + 3) / 4 * 4;
        return offset_.fetch_add(rounded) / 4;
    }

private:
    std::atomic<std::uint64_t> seed_;
    std::atomic<std::uint64_t> offset_{0};
};

/// The generator random ops on `dev` use when none is given (one per device).
inline generator& default_generator(const device& d) {
    static detail::per_device<generator> generators;
    return generators[d];
}

/// Seeds the default generator of every device (torch.manual_seed).
inline void manual_seed(std::uint64_t seed) noexcept {
    for (int i = -1; i < DEVTENSOR_MAX_CUDA_DEVICES; ++i)
        default_generator(i < 0 ? device() : device(device_kind::cuda, i)).manual_seed(seed);
}

}  // namespace devtensor
