#include "launch/wire.h"

#include <cstdint>

#include "util/text.h"

namespace pg::launch {

std::string oversized(std::size_t size, std::size_t limit) {
  return "a frame of " + std::to_string(size) + " bytes, above the limit of " + std::to_string(limit) + " bytes (" +
         text::format_bytes(limit) + ")";
}

bool frame(const Fields &fields, std::string *out, std::string *error, std::size_t limit) {
  std::size_t size = fields.empty() ? 0 : fields.size() - 1;
  for (const std::string &f : fields) size += f.size();
  // Refused before anything is copied: the peer would refuse it anyway.
  if (size > limit) {
    *error = oversized(size, limit);
    return false;
  }
  out->clear();
  out->reserve(kFrameHeader + size);
  const std::uint64_t n = size;
  for (int shift = 56; shift >= 0; shift -= 8) *out += static_cast<char>((n >> shift) & 0xff);
  for (std::size_t i = 0; i < fields.size(); ++i) {
    if (i) *out += '\n';
    for (char c : fields[i]) *out += (c == '\n' || c == '\0') ? ' ' : c;
  }
  return true;
}

int FrameReader::next(Fields *fields, std::string *error) {
  if (buffered() < kFrameHeader) return 0;
  const auto *p = reinterpret_cast<const unsigned char *>(buffer_.data() + start_);
  std::uint64_t n = 0;
  for (std::size_t i = 0; i < kFrameHeader; ++i) n = n << 8 | p[i];
  if (n > limit_) {
    *error = oversized(n, limit_);
    return -1;
  }
  if (buffered() < kFrameHeader + n) return 0;
  *fields = text::split(std::string_view(buffer_).substr(start_ + kFrameHeader, n), '\n');
  start_ += kFrameHeader + n;
  // Drop what was read once it is most of the buffer.
  if (start_ > 4096 && start_ * 2 > buffer_.size()) {
    buffer_.erase(0, start_);
    start_ = 0;
  }
  return 1;
}

}  // namespace pg::launch
