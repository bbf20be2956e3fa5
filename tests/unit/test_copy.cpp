// pull_pages (util/copy.h) copies what memcpy copies, at every length around
// its strides (pages taken a few at a time) and at every alignment of either side,
// leaving the bytes around the destination as they were.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "util/copy.h"

namespace {

constexpr std::size_t kStride = pg::pull_detail::kStride;

TEST(PullPages, CopiesEveryLengthAndAlignment) {
  const std::size_t lengths[] = {0, 1, 63, 4096, kStride - 1, kStride, 2 * kStride - 1, 2 * kStride,
                                 2 * kStride + 1, 3 * kStride + 4095, 5 * kStride + 64};
  const std::size_t largest = 5 * kStride + 64, guard = 128;
  std::vector<std::uint8_t> from(largest + guard), to(largest + 2 * guard);
  for (std::size_t i = 0; i < from.size(); ++i) from[i] = static_cast<std::uint8_t>(i * 131 + 7);
  for (std::size_t n : lengths)
    for (std::size_t skew_from : {0, 1, 32})
      for (std::size_t skew_to : {0, 5, 64}) {
        std::fill(to.begin(), to.end(), std::uint8_t(0xA5));
        pg::pull_pages(to.data() + guard + skew_to, from.data() + skew_from, n);
        for (std::size_t i = 0; i < to.size(); ++i) {
          const bool inside = i >= guard + skew_to && i < guard + skew_to + n;
          const std::uint8_t want = inside ? from[i - guard - skew_to + skew_from] : std::uint8_t(0xA5);
          ASSERT_EQ(to[i], want) << "n=" << n << " source offset " << skew_from << " destination offset "
                                 << skew_to << ", byte " << i;
        }
      }
}

}  // namespace
