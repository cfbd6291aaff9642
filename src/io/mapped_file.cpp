#include "io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gknn/error.hpp"

namespace gknn::io_detail {
namespace {

[[noreturn]] void fail_io(const char* action, const std::string& path, int err) {
  detail::fail(ErrorCode::Io, "cannot ", action, " '", path, "': ", std::strerror(err));
}

/// Closes a descriptor on every path out of the constructor; the mapping stays valid after close.
struct FdGuard {
  int fd;
  ~FdGuard() { ::close(fd); }
};

}  // namespace

MappedFile::MappedFile(const std::string& path) : path_(path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_io("open", path, errno);
  FdGuard guard{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) fail_io("inspect", path, errno);
  if (!S_ISREG(st.st_mode)) detail::fail(ErrorCode::Io, "cannot read '", path, "': not a regular file");
  size_ = static_cast<size_t>(st.st_size);
  if (size_ == 0) return;
  void* p = ::mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) fail_io("map", path, errno);
  // Readers stream through the file once; the hint doubles kernel read-ahead.
  ::madvise(p, size_, MADV_SEQUENTIAL);
  data_ = static_cast<const unsigned char*>(p);
}

MappedFile::~MappedFile() {
  if (data_ != nullptr) ::munmap(const_cast<unsigned char*>(data_), size_);
}

OutputFile::OutputFile(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "wb");
  if (file_ == nullptr) fail_io("create", path, errno);
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void OutputFile::write(const void* bytes, size_t count) {
  if (count == 0) return;
  if (std::fwrite(bytes, 1, count, file_) != count) fail_io("write", path_, errno);
}

void OutputFile::close() {
  if (file_ == nullptr) return;
  std::FILE* f = file_;
  file_ = nullptr;
  if (std::fflush(f) != 0) {
    int err = errno;
    std::fclose(f);
    fail_io("write", path_, err);
  }
  if (std::fclose(f) != 0) fail_io("close", path_, errno);
}

}  // namespace gknn::io_detail
