// The frames the bootstrap's rendezvous and its members exchange over TCP
// (docs/launch.md): an 8-byte big-endian length, then that many bytes, which
// are fields separated by '\n', the verb first. A peer that has not proved
// the job's secret may send only small frames; nothing a peer sends is
// trusted to be well formed, and nothing above the limit is sent either.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pg::launch {

using Fields = std::vector<std::string>;

// Largest frame before a peer has proved the secret, and after.
constexpr std::size_t kMaxHelloFrame = 4096;
constexpr std::size_t kMaxFrame = std::size_t(64) << 20;
// The length before each frame's body.
constexpr std::size_t kFrameHeader = 8;

// The frame of `fields` in *out; a '\n' or '\0' inside a field becomes a
// space. A body above `limit` is not framed: false, and *error names its size
// and the limit.
bool frame(const Fields &fields, std::string *out, std::string *error, std::size_t limit = kMaxFrame);

// "a frame of N bytes, above the limit of L bytes (64 MiB)": what both sides say.
std::string oversized(std::size_t size, std::size_t limit);

// Cuts received bytes into frames.
class FrameReader {
 public:
  explicit FrameReader(std::size_t limit) : limit_(limit) {}
  void set_limit(std::size_t limit) { limit_ = limit; }
  void feed(const char *data, std::size_t size) { buffer_.append(data, size); }
  // 1: *fields holds the next frame; 0: more bytes are needed; -1: the peer
  // broke the framing (*error says how; the connection must go).
  int next(Fields *fields, std::string *error);
  std::size_t buffered() const { return buffer_.size() - start_; }

 private:
  std::string buffer_;
  std::size_t start_ = 0;
  std::size_t limit_;
};

}  // namespace pg::launch
