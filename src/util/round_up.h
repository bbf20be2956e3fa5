// Sizes and addresses rounded up to a multiple (a page, a cache line, a vector).
#pragma once

#include <cstddef>

namespace pg {

constexpr std::size_t round_up(std::size_t n, std::size_t to) { return (n + to - 1) / to * to; }

}  // namespace pg
