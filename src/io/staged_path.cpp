#include "io/staged_path.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "gknn/error.hpp"
#include "gknn/io.hpp"

namespace gknn::detail::io {
namespace {

/// Temporary names of the outputs being written, readable from a signal handler: fixed storage, no allocation,
/// a slot is published (state 2) only after its name is complete. More simultaneous outputs than slots are
/// still written safely, only not removed by remove_g_partial_outputs.
struct PartialOutputs {
  static constexpr int kSlots = 32;
  std::array<std::atomic<int>, kSlots> state{};  // 0 free, 1 being filled, 2 published
  std::array<std::array<char, PATH_MAX>, kSlots> names{};

  int add(const std::string& name) {
    if (name.size() >= PATH_MAX) return -1;
    for (int i = 0; i < kSlots; ++i) {
      int expected = 0;
      if (!state[i].compare_exchange_strong(expected, 1)) continue;
      std::memcpy(names[i].data(), name.c_str(), name.size() + 1);
      state[i].store(2);
      return i;
    }
    return -1;
  }
  void remove(int slot) {
    if (slot >= 0) state[slot].store(0);
  }
  void unlink_all() noexcept {
    for (int i = 0; i < kSlots; ++i)
      if (state[i].load() == 2) ::unlink(names[i].data());
  }
};

// Constant-initialised (no guard variable, no constructor): safe to touch from a signal handler at any time.
constinit PartialOutputs g_partial_outputs{};

std::string resolve_links(const std::string& path) {
  char resolved[PATH_MAX];
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode) && ::realpath(path.c_str(), resolved) != nullptr)
    return resolved;
  return path;
}

std::string temporary_name(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  return target + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter.fetch_add(1));
}

}  // namespace

StagedPath::StagedPath(const std::string& target) : target_(resolve_links(target)) {
  struct stat st {};
  in_place_ = ::stat(target_.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
  if (in_place_) {
    write_path_ = target_;
    return;
  }
  write_path_ = temporary_name(target_);
  slot_ = g_partial_outputs.add(write_path_);
}

StagedPath::~StagedPath() {
  if (!in_place_ && !committed_) ::unlink(write_path_.c_str());
  g_partial_outputs.remove(slot_);
}

void StagedPath::commit() {
  if (in_place_) return;
  if (::rename(write_path_.c_str(), target_.c_str()) != 0)
    detail::fail(ErrorCode::Io, "cannot write '", target_, "': renaming the finished temporary file failed: ",
                 std::strerror(errno));
  committed_ = true;
}

}  // namespace gknn::detail::io

namespace gknn {
void remove_partial_outputs() noexcept { detail::io::g_partial_outputs.unlink_all(); }
}  // namespace gknn
