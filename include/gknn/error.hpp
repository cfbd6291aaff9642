// gknn/error.hpp: the one exception type of the library.
//
// Every failure the user can cause (bad argument, unreadable or malformed file, out of memory, a CUDA
// failure, an option that this build does not support) surfaces as gknn::Error with a code and a message
// that names the offending argument, file or row.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace gknn {

enum class ErrorCode {
  InvalidArgument,  ///< an argument or an input value is out of its domain (k <= 0, NaN in row 7, ...)
  Io,               ///< a file cannot be opened, read or written
  Format,           ///< a file's content does not follow its format (truncated fvecs, bad npy header, ...)
  OutOfMemory,      ///< host or device memory could not be allocated, even after batching
  Cuda,             ///< a CUDA, cuBLAS or driver call failed
  Unsupported,      ///< valid request this build or device cannot serve (e.g. backend=cuda without CUDA)
  Internal,         ///< an invariant of gknn itself was violated: a bug, please report it
};

/// Stable lower-case name of an error code ("invalid_argument", "io", ...).
const char* to_string(ErrorCode code) noexcept;

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

namespace detail {
/// Builds a message from stream-insertable parts: fail(ErrorCode::Io, "cannot open '", path, "'").
template <class... Parts>
[[noreturn]] void fail(ErrorCode code, const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  throw Error(code, out.str());
}
}  // namespace detail

}  // namespace gknn

/// Throws gknn::Error(code, message parts...) unless cond holds.
#define GKNN_EXPECT(cond, code, ...)                        \
  do {                                                      \
    if (!(cond)) ::gknn::detail::fail((code), __VA_ARGS__); \
  } while (0)
