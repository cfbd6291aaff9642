// json_writer.hpp: a minimal streaming JSON writer for machine-readable CLI output (no dependency needed).
#pragma once

#include <cmath>
#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>

namespace gknn::cli {

/// Writes one JSON value. Call key() before each member of an object; commas are inserted automatically.
class JsonWriter {
 public:
  explicit JsonWriter(std::ostream& out) : out_(out) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }

  JsonWriter& key(std::string_view name) {
    separate();
    write_string(name);
    out_ << ':';
    after_key_ = true;
    return *this;
  }
  JsonWriter& value(std::string_view s) {
    separate();
    write_string(s);
    return *this;
  }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(bool b) {
    separate();
    out_ << (b ? "true" : "false");
    return *this;
  }
  JsonWriter& value(long long n) {
    separate();
    out_ << n;
    return *this;
  }
  JsonWriter& value(int n) { return value(static_cast<long long>(n)); }
  JsonWriter& value(long n) { return value(static_cast<long long>(n)); }
  /// Non-finite numbers have no JSON spelling: written as null.
  JsonWriter& value(double x) {
    separate();
    if (!std::isfinite(x)) {
      out_ << "null";
      return *this;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    out_ << buf;
    return *this;
  }

 private:
  JsonWriter& open(char c) {
    separate();
    out_ << c;
    first_ = true;
    return *this;
  }
  JsonWriter& close(char c) {
    out_ << c;
    first_ = false;
    return *this;
  }
  void separate() {
    if (!after_key_ && !first_) out_ << ',';
    after_key_ = false;
    first_ = false;
  }
  void write_string(std::string_view s) {
    out_ << '"';
    for (unsigned char c : s) {
      if (c == '"' || c == '\\') out_ << '\\' << c;
      else if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out_ << buf;
      } else out_ << c;
    }
    out_ << '"';
  }

  std::ostream& out_;
  bool first_ = true;      // nothing written yet in the current container (or at top level)
  bool after_key_ = false;  // the next value belongs to the key just written
};

}  // namespace gknn::cli
