#include "launch/wire.h"

#include <cstdint>

#include "util/text.h"

namespace pg::launch {

std::string frame(const Fields &fields) {
  std::string body;
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) body += '\n';
    for (char c : fields[i]) body += (c == '\n' || c == '\0') ? ' ' : c;
  }
  const std::uint32_t n = static_cast<std::uint32_t>(body.size());
  std::string out;
  out.reserve(4 + body.size());
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((n >> shift) & 0xff);
  out += body;
  return out;
}

int FrameReader::next(Fields *fields, std::string *error) {
  if (buffered() < 4) return 0;
  const auto *p = reinterpret_cast<const unsigned char *>(buffer_.data() + start_);
  const std::size_t n = std::size_t(p[0]) << 24 | std::size_t(p[1]) << 16 | std::size_t(p[2]) << 8 | p[3];
  if (n > limit_) {
    *error = "a frame of " + std::to_string(n) + " bytes, above the limit of " + std::to_string(limit_);
    return -1;
  }
  if (buffered() < 4 + n) return 0;
  *fields = text::split(std::string_view(buffer_).substr(start_ + 4, n), '\n');
  start_ += 4 + n;
  // Drop what was read once it is most of the buffer.
  if (start_ > 4096 && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return 1;
}

}  // namespace pg::launch
