#include "io/mapped_file.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "gknn/error.hpp"

namespace gknn::detail::io {
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

OutputFile::OutputFile(const std::string& path) : staged_(path) {
  const std::string& name = staged_.write_path();
  // O_EXCL: a temporary name is never shared; in place (a device, a FIFO) the target is opened as it is.
  const int flags = O_WRONLY | O_CLOEXEC | (name == staged_.target() ? O_TRUNC : O_CREAT | O_EXCL);
  int fd = ::open(name.c_str(), flags, 0666);
  if (fd < 0) fail_io("create", staged_.target(), errno);
  file_ = ::fdopen(fd, "wb");
  if (file_ == nullptr) {
    int err = errno;
    ::close(fd);
    fail_io("create", staged_.target(), err);
  }
}

OutputFile::~OutputFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void OutputFile::write(const void* bytes, size_t count) {
  if (count == 0) return;
  if (std::fwrite(bytes, 1, count, file_) != count) fail_io("write", staged_.target(), errno);
}

void OutputFile::close() {
  if (file_ == nullptr) return;
  std::FILE* f = file_;
  file_ = nullptr;
  // fsync before the rename: after a crash the name holds either the old file or the complete new one.
  // Devices and FIFOs written in place do not support fsync (EINVAL), which is not an error.
  if (std::fflush(f) != 0 || (::fsync(::fileno(f)) != 0 && errno != EINVAL && errno != EROFS)) {
    int err = errno;
    std::fclose(f);
    fail_io("write", staged_.target(), err);
  }
  if (std::fclose(f) != 0) fail_io("close", staged_.target(), errno);
  staged_.commit();
}

}  // namespace gknn::detail::io
