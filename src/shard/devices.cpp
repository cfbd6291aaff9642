// devices.cpp: shard lists from the command line's --devices syntax ("0,1", "all") and CPU shard lists.
#include <algorithm>
#include <charconv>
#include <string>

#include "gknn/error.hpp"
#include "gknn/info.hpp"
#include "gknn/sharded_index.hpp"

namespace gknn {

std::vector<ShardDevice> parse_devices(std::string_view list) {
  const std::vector<DeviceInfo> visible = cuda_devices();
  std::vector<ShardDevice> out;
  if (list == "all") {
    GKNN_EXPECT(!visible.empty(), ErrorCode::Unsupported, "--devices all: no CUDA device is visible");
    for (const DeviceInfo& d : visible) out.push_back({Backend::Cuda, d.ordinal});
    return out;
  }
  size_t begin = 0;
  while (begin <= list.size()) {
    const size_t end = std::min(list.find(',', begin), list.size());
    const std::string_view entry = list.substr(begin, end - begin);
    int ordinal = -1;
    const auto [ptr, ec] = std::from_chars(entry.data(), entry.data() + entry.size(), ordinal);
    GKNN_EXPECT(ec == std::errc() && ptr == entry.data() + entry.size() && ordinal >= 0, ErrorCode::InvalidArgument,
                "devices '", std::string(list), "': '", std::string(entry),
                "' is not a device ordinal (expected e.g. 0,1 or all)");
    out.push_back({Backend::Cuda, ordinal});
    begin = end + 1;
  }
  for (const ShardDevice& d : out)  // after the syntax, so that a typo is reported as one on any machine
    GKNN_EXPECT(d.device < int(visible.size()), ErrorCode::InvalidArgument, "devices '", std::string(list),
                "': device ", d.device, " is not visible (", visible.size(), " CUDA device(s))");
  return out;
}

std::vector<ShardDevice> cpu_shards(int count) {
  GKNN_EXPECT(count > 0, ErrorCode::InvalidArgument, "the number of CPU shards must be positive (got ", count, ")");
  return std::vector<ShardDevice>(size_t(count), ShardDevice{Backend::Cpu, 0});
}

std::string describe_shards(const std::vector<ShardDevice>& shards) {
  std::string s;
  for (const ShardDevice& d : shards) {
    if (!s.empty()) s += ',';
    s += d.backend == Backend::Cuda ? "cuda:" + std::to_string(d.device) : std::string("cpu");
  }
  return s;
}

}  // namespace gknn
