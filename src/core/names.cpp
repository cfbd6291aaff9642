// names.cpp: the one table of user-facing names of every enum (CLI, benchmarks, errors).
#include <string>
#include <utility>

#include "gknn/error.hpp"
#include "gknn/types.hpp"

namespace gknn {
namespace {

/// A name table: an array of (value, name) pairs, its size deduced.
template <class E, size_t N>
using NameTable = std::pair<E, const char*>[N];

constexpr std::pair<Metric, const char*> kMetrics[] = {
    {Metric::SquaredL2, "squared_l2"}, {Metric::L2, "l2"}, {Metric::InnerProduct, "inner_product"},
    {Metric::Cosine, "cosine"},        {Metric::L1, "l1"}, {Metric::Linf, "linf"},
    {Metric::Lp, "lp"}};

constexpr std::pair<Backend, const char*> kBackends[] = {
    {Backend::Auto, "auto"}, {Backend::Cpu, "cpu"}, {Backend::Cuda, "cuda"}};

constexpr std::pair<Guard, const char*> kGuards[] = {
    {Guard::Auto, "auto"}, {Guard::Always, "always"}, {Guard::Off, "off"}};

// The algorithm tables are generated from the one list, gknn/algorithms.def, with Auto in front.
constexpr std::pair<DistanceAlgorithm, const char*> kDistances[] = {
    {DistanceAlgorithm::Auto, "auto"},
#define GKNN_DISTANCE(id, name, backends, precision, summary) {DistanceAlgorithm::id, name},
#include "gknn/algorithms.def"
};

constexpr std::pair<SelectAlgorithm, const char*> kSelects[] = {
    {SelectAlgorithm::Auto, "auto"},
#define GKNN_SELECT(id, name, backends, flags, summary) {SelectAlgorithm::id, name},
#include "gknn/algorithms.def"
};

template <class E, size_t N>
std::string name_of(const NameTable<E, N>& table, E value) {
  for (const auto& [e, name] : table)
    if (e == value) return name;
  return "unknown";
}

template <class E, size_t N>
E parse_name(const NameTable<E, N>& table, std::string_view name, const char* what) {
  std::string accepted;
  for (const auto& [e, n] : table) {
    if (name == n) return e;
    accepted += accepted.empty() ? "" : ", ";
    accepted += n;
  }
  detail::fail(ErrorCode::InvalidArgument, "unknown ", what, " '", name, "' (accepted: ", accepted, ")");
}

template <class E, size_t N>
std::vector<E> all_of(const NameTable<E, N>& table) {
  std::vector<E> out;
  for (const auto& [e, n] : table)
    if (e != E::Auto) out.push_back(e);
  return out;
}

/// "insertion_queue, heap_queue, merge_queue": the selections that take Tang's flags.
std::string tang_queue_names() {
  std::string out;
  for (const catalogue::SelectInfo& s : catalogue::kSelects)
    if (catalogue::takes_tang_flags(s.algorithm)) out += (out.empty() ? "" : ", ") + std::string(s.name);
  return out;
}

}  // namespace

const char* to_string(ErrorCode code) noexcept {
  switch (code) {
    case ErrorCode::InvalidArgument: return "invalid_argument";
    case ErrorCode::Io: return "io";
    case ErrorCode::Format: return "format";
    case ErrorCode::OutOfMemory: return "out_of_memory";
    case ErrorCode::Cuda: return "cuda";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::Internal: return "internal";
  }
  return "unknown";
}

std::string to_string(Metric m) { return name_of(kMetrics, m); }
std::string to_string(Backend b) { return name_of(kBackends, b); }
std::string to_string(DistanceAlgorithm a) { return name_of(kDistances, a); }
std::string to_string(Guard g) { return name_of(kGuards, g); }
std::string to_string(SelectAlgorithm a) { return name_of(kSelects, a); }

std::string select_name(SelectAlgorithm a, const TangOptions& tang) {
  std::string name = to_string(a);
  if (!catalogue::takes_tang_flags(a)) return name;
  if (tang.aligned) name += "+aligned";
  if (tang.buffered) name += "+buffered";
  if (tang.hierarchical) name += "+hp";
  return name;
}

Metric parse_metric(std::string_view name) { return parse_name(kMetrics, name, "metric"); }
Backend parse_backend(std::string_view name) { return parse_name(kBackends, name, "backend"); }
DistanceAlgorithm parse_distance(std::string_view name) { return parse_name(kDistances, name, "distance algorithm"); }
Guard parse_guard(std::string_view name) { return parse_name(kGuards, name, "guard"); }

SelectAlgorithm parse_select(std::string_view name, TangOptions* tang) {
  const size_t plus = name.find('+');
  const SelectAlgorithm algo = parse_name(kSelects, name.substr(0, plus), "selection algorithm");
  TangOptions flags = tang ? *tang : TangOptions{};
  flags.aligned = flags.buffered = flags.hierarchical = false;
  for (size_t at = plus; at != std::string_view::npos;) {
    const size_t next = name.find('+', at + 1);
    const std::string_view flag = name.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    GKNN_EXPECT(catalogue::takes_tang_flags(algo), ErrorCode::InvalidArgument, "selection '", name,
                "': flags (+", flag, ") apply only to ", tang_queue_names());
    if (flag == "aligned") flags.aligned = true;
    else if (flag == "buffered") flags.buffered = true;
    else if (flag == "hp") flags.hierarchical = true;
    else detail::fail(ErrorCode::InvalidArgument, "selection '", name, "': unknown flag '", flag,
                      "' (accepted: aligned, buffered, hp)");
    at = next;
  }
  if (tang) *tang = flags;
  return algo;
}

std::vector<DistanceAlgorithm> all_distance_algorithms() { return all_of(kDistances); }
std::vector<SelectAlgorithm> all_select_algorithms() { return all_of(kSelects); }

}  // namespace gknn
