// mapped_file.hpp: read-only memory map of a whole file, and a checked binary writer.
//
// Datasets are read through mmap so that taking rows [first, first+count) of a large file touches only
// those pages, and a full read is one memcpy per row rather than one read() per element.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "io/staged_path.hpp"

namespace gknn::detail::io {

class MappedFile {
 public:
  /// Maps `path` read-only; throws Io naming the path when it cannot be opened, inspected or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const unsigned char* data() const noexcept { return data_; }
  size_t size() const noexcept { return size_; }
  const std::string& path() const noexcept { return path_; }

 private:
  std::string path_;
  const unsigned char* data_ = nullptr;  ///< null for an empty file (mmap rejects length 0)
  size_t size_ = 0;
};

/// Writes a file under a temporary name beside `path` (see StagedPath); every write and the final close are
/// checked and throw Io naming the path, so a full disk is reported instead of leaving a silently short file.
/// Only close() puts the file under its name: an exception or an early return leaves no file behind.
class OutputFile {
 public:
  explicit OutputFile(const std::string& path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* bytes, size_t count);
  /// Flushes, syncs, closes and renames onto `path`; must be called for the data to count as written (the
  /// destructor only cleans up).
  void close();

 private:
  StagedPath staged_;
  std::FILE* file_ = nullptr;
};

}  // namespace gknn::detail::io
