#include "cli_common.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "gknn/error.hpp"

namespace gknn::cli {

CLI::Validator name_check(std::function<void(const std::string&)> parse, const std::string& what) {
  return CLI::Validator(
      [parse](std::string& value) -> std::string {
        try {
          parse(value);
          return {};
        } catch (const gknn::Error& e) {
          return e.what();
        }
      },
      what);
}

namespace {
CLI::Validator number_check(bool allow_zero, const char* name) {
  return CLI::Validator(
      [allow_zero](std::string& value) -> std::string {
        double x = 0;
        size_t used = 0;
        try {
          x = std::stod(value, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != value.size() || !std::isfinite(x)) return "'" + value + "' is not a number";
        if (x > 0 || (allow_zero && x == 0)) return {};
        return std::string("must be ") + (allow_zero ? ">= 0" : "> 0") + " (got " + value + ")";
      },
      name);
}
}  // namespace

CLI::Validator positive() { return number_check(false, "POSITIVE"); }
CLI::Validator non_negative() { return number_check(true, "NONNEGATIVE"); }

size_t parse_bytes(const std::string& text) {
  size_t used = 0;
  double number = 0;
  try {
    number = std::stod(text, &used);
  } catch (const std::exception&) {
    detail::fail(ErrorCode::InvalidArgument, "'", text, "' is not a size (examples: 4096, 512M, 2G)");
  }
  std::string unit = text.substr(used);
  std::transform(unit.begin(), unit.end(), unit.begin(), [](unsigned char c) { return std::toupper(c); });
  // The unit is a binary prefix optionally followed by "B" or "iB": 512M = 512MB = 512MiB = 512 * 2^20 bytes.
  std::string prefix = unit;
  if (prefix.size() > 2 && prefix.ends_with("IB")) prefix.resize(prefix.size() - 2);
  else if (prefix.ends_with("B")) prefix.pop_back();
  double scale = 0;
  for (const auto& [name, factor] : {std::pair{"", 1.0}, {"K", 0x1p10}, {"M", 0x1p20}, {"G", 0x1p30}, {"T", 0x1p40}})
    if (prefix == name) scale = factor;
  GKNN_EXPECT(scale > 0, ErrorCode::InvalidArgument, "unknown unit in '", text,
              "' (accepted: none, K, M, G, T, optionally followed by B or iB)");
  GKNN_EXPECT(std::isfinite(number) && number >= 0 && number * scale < 0x1p62, ErrorCode::InvalidArgument,
              "size '", text, "' is out of range");
  return static_cast<size_t>(number * scale);
}

void ensure_writable(const std::string& path, const std::string& option) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool existed = fs::exists(path, ec);
  GKNN_EXPECT(!existed || !fs::is_directory(path, ec), ErrorCode::Io, option, ": '", path, "' is a directory");
  {
    std::ofstream probe(path, std::ios::binary | std::ios::app);  // append: never truncates an existing file
    GKNN_EXPECT(probe.good(), ErrorCode::Io, option, ": cannot write '", path,
                "' (missing directory or no permission)");
  }
  if (!existed) fs::remove(path, ec);
}

std::string extension_of(const std::string& path) {
  std::string name = std::filesystem::path(path).filename().string();
  const size_t colon = name.find(':');
  if (colon != std::string::npos) name.resize(colon);
  const size_t dot = name.rfind('.');
  if (dot == std::string::npos) return {};
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

namespace {
std::vector<std::string>& recorded_command_line() {
  static std::vector<std::string> words;
  return words;
}
}  // namespace

void remember_command_line(int argc, const char* const* argv) { recorded_command_line().assign(argv, argv + argc); }

const std::vector<std::string>& command_line() { return recorded_command_line(); }

std::string shell_line(const std::vector<std::string>& words) {
  const auto plain = [](const std::string& w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](unsigned char c) {
      return std::isalnum(c) || std::string_view("_-./,=:+@%").find(char(c)) != std::string_view::npos;
    });
  };
  std::string line;
  for (const std::string& word : words) {
    if (!line.empty()) line += ' ';
    if (plain(word)) {
      line += word;
      continue;
    }
    line += '\'';
    for (char c : word) line += c == '\'' ? std::string("'\\''") : std::string(1, c);
    line += '\'';
  }
  return line;
}

void check_neighbour_outputs(const std::string& indices_out, const std::string& distances_out) {
  if (!indices_out.empty()) {
    const std::string ext = extension_of(indices_out);
    GKNN_EXPECT(ext == "ivecs" || ext == "npy", ErrorCode::InvalidArgument, "-o: '", indices_out,
                "' must end in .ivecs or .npy");
    ensure_writable(indices_out, "-o");
  }
  if (!distances_out.empty()) {
    const std::string ext = extension_of(distances_out);
    GKNN_EXPECT(ext == "fvecs" || ext == "npy", ErrorCode::InvalidArgument, "--distances-out: '", distances_out,
                "' must end in .fvecs or .npy");
    ensure_writable(distances_out, "--distances-out");
  }
}

}  // namespace gknn::cli
