// staged_path.hpp: every output file is written under a temporary name in its own directory and renamed onto
// its real name only once complete, so that a failed write (disk full, I/O error), an exception or a signal
// never leaves a truncated result under the name the user asked for.
#pragma once

#include <string>

namespace gknn::detail::io {

class StagedPath {
 public:
  /// Picks "<target>.tmp-<pid>-<n>" beside `target` (a symbolic link is resolved, so the link survives) and
  /// registers it for remove_partial_outputs(). A target that exists and is not a regular file (a character
  /// device such as /dev/null or /dev/full, a FIFO) cannot be replaced by a rename: it is written in place.
  explicit StagedPath(const std::string& target);
  /// Removes the temporary file unless commit() succeeded.
  ~StagedPath();
  StagedPath(const StagedPath&) = delete;
  StagedPath& operator=(const StagedPath&) = delete;

  /// The name to create and write.
  const std::string& write_path() const noexcept { return write_path_; }
  /// The name the user asked for (for messages).
  const std::string& target() const noexcept { return target_; }
  /// Renames the finished file onto the target (atomic within one file system); throws Io naming the target.
  void commit();

 private:
  std::string target_;
  std::string write_path_;
  bool in_place_ = false;
  bool committed_ = false;
  int slot_ = -1;  ///< index in the registry of partial outputs, -1 when not registered
};

}  // namespace gknn::detail::io
