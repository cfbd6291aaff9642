// csv_table.cpp: the measured tables' shared CSV reading (csv_table.hpp).
#include "plan/csv_table.hpp"

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gknn::detail::plan {

std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t start = 0;
  for (size_t comma; (comma = line.find(',', start)) != std::string_view::npos; start = comma + 1)
    out.push_back(line.substr(start, comma - start));
  out.push_back(line.substr(start));
  return out;
}

void for_each_row(std::string_view text, const std::string& source, std::string_view header,
                  const std::function<void(std::string_view line, const std::string& where, int line_number)>& row) {
  bool seen_header = false;
  int line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.front() == '#') continue;
    const std::string where = source + " line " + std::to_string(line_number);
    if (!seen_header) {
      GKNN_EXPECT(line == header, ErrorCode::Format, where, ": expected the header '", header, "'");
      seen_header = true;
      continue;
    }
    row(line, where, line_number);
  }
}

std::string_view table_text(const char* env, std::string_view built_in, const std::string& built_in_source,
                            std::string& file_text, std::string& source) {
  const char* path = std::getenv(env);
  if (!path || !*path) {
    source = built_in_source;
    return built_in;
  }
  std::ifstream in(path);
  GKNN_EXPECT(in.good(), ErrorCode::Io, env, ": cannot open '", path, "'");
  std::ostringstream text;
  text << in.rdbuf();
  file_text = text.str();
  source = path;
  return file_text;
}

}  // namespace gknn::detail::plan
