// make_seeds: writes the seed corpora of the fuzz harnesses (fuzz/corpus/<harness>/): small valid files written
// by gknn's own writers, and damaged copies of them (truncated, oversized or negative headers, a header length
// beyond the file). Run once by hand; the outputs are committed:
//   build-fuzz/fuzz/make_seeds fuzz/corpus
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "gknn/io.hpp"

namespace fs = std::filesystem;
using namespace gknn;
using Bytes = std::vector<char>;

namespace {

Bytes slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& p, const Bytes& b) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(b.data(), static_cast<std::streamsize>(b.size()));
}

void spit(const fs::path& p, const std::string& s) { spit(p, Bytes(s.begin(), s.end())); }

Bytes truncated(Bytes b, size_t drop) {
  b.resize(b.size() > drop ? b.size() - drop : 0);
  return b;
}

Bytes with_int32_at(Bytes b, size_t offset, int32_t v) {
  std::memcpy(b.data() + offset, &v, sizeof v);
  return b;
}

HostMatrix<float> sample_floats(int64_t rows, int64_t cols) {
  HostMatrix<float> m(rows, cols);
  for (size_t i = 0; i < m.data.size(); ++i) m.data[i] = static_cast<float>(i) * 0.5f - 3.0f;
  return m;
}

void vecs_seeds(const fs::path& dir) {
  HostMatrix<float> f = sample_floats(3, 4);
  write_fvecs((dir / "valid.fvecs").string(), f.view());
  HostMatrix<uint8_t> b(2, 8);
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = static_cast<uint8_t>(i * 17);
  write_bvecs((dir / "valid.bvecs").string(), std::as_const(b).view());
  const Bytes valid = slurp(dir / "valid.fvecs");
  spit(dir / "truncated_row.fvecs", truncated(valid, 3));
  spit(dir / "header_only.fvecs", Bytes(valid.begin(), valid.begin() + 4));
  spit(dir / "short_header.fvecs", Bytes(valid.begin(), valid.begin() + 2));
  spit(dir / "huge_dim.fvecs", with_int32_at(valid, 0, INT32_MAX));
  spit(dir / "negative_dim.fvecs", with_int32_at(valid, 0, -4));
  spit(dir / "row_dim_differs.fvecs", with_int32_at(valid, 20, 5));
  spit(dir / "empty.fvecs", Bytes{});
}

std::string npy_file(const std::string& descr, const std::string& shape, int major, const std::string& payload,
                     const std::string& extra_keys = "'fortran_order': False, ") {
  std::string header = "{'descr': '" + descr + "', " + extra_keys + "'shape': " + shape + ", }";
  const size_t prefix = major == 1 ? 10 : 12;
  header.append((64 - (prefix + header.size() + 1) % 64) % 64, ' ');
  header.push_back('\n');
  std::string out = "\x93NUMPY";
  out.push_back(static_cast<char>(major));
  out.push_back(0);
  const size_t len = header.size();
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<char>((len >> (8 * i)) & 0xff));
  return out + header + payload;
}

void npy_seeds(const fs::path& dir) {
  const HostMatrix<float> f4 = sample_floats(2, 3);
  write_npy((dir / "valid_f4.npy").string(), f4.view());
  HostMatrix<int64_t> ids(2, 2);
  ids.data = {0, 1, 7, 3};
  write_npy((dir / "valid_i8.npy").string(), std::as_const(ids).view());
  const std::string eight(8, '\x01'), sixteen(16, '\x02');
  spit(dir / "valid_f8.npy", npy_file("<f8", "(2, 1)", 1, sixteen));
  spit(dir / "valid_u1.npy", npy_file("|u1", "(2, 4)", 1, eight));
  spit(dir / "valid_i4.npy", npy_file("<i4", "(1, 2)", 1, eight));
  spit(dir / "one_dim.npy", npy_file("<f4", "(2,)", 1, eight));
  spit(dir / "version2.npy", npy_file("<f4", "(1, 2)", 2, eight));
  spit(dir / "version3.npy", npy_file("<f4", "(2, 1)", 3, eight));
  spit(dir / "short_payload.npy", npy_file("<f4", "(3, 3)", 1, eight));
  spit(dir / "huge_shape.npy", npy_file("<f8", "(4611686018427387904, 4611686018427387904)", 1, eight));
  spit(dir / "zero_rows.npy", npy_file("<f4", "(0, 1000000000000)", 1, ""));
  spit(dir / "fortran.npy", npy_file("<f4", "(1, 2)", 1, eight, "'fortran_order': True, "));
  spit(dir / "big_endian.npy", npy_file(">f4", "(1, 2)", 1, eight));
  Bytes long_header = slurp(dir / "valid_f4.npy");
  long_header[8] = '\xff';
  long_header[9] = '\xff';
  spit(dir / "header_beyond_file.npy", long_header);
  spit(dir / "magic_only.npy", std::string("\x93NUMPY\x01", 7));
}

void hdf5_seeds(const fs::path& dir) {
  if (!hdf5_supported()) {
    std::fprintf(stderr, "make_seeds: no HDF5 in this build, hdf5 seeds not written\n");
    return;
  }
  AnnDataset d;
  d.train = sample_floats(4, 2);
  d.test = sample_floats(2, 2);
  d.neighbors = HostMatrix<int32_t>(2, 2);
  d.neighbors.data = {0, 1, 2, 3};
  d.distances = sample_floats(2, 2);
  d.distance = "angular";
  write_ann_hdf5((dir / "valid.hdf5").string(), d);
  AnnDataset minimal;
  minimal.train = sample_floats(1, 1);
  minimal.test = sample_floats(1, 1);
  write_ann_hdf5((dir / "minimal.hdf5").string(), minimal);
  const Bytes valid = slurp(dir / "valid.hdf5");
  spit(dir / "truncated_half.hdf5", Bytes(valid.begin(), valid.begin() + static_cast<long>(valid.size() / 2)));
  spit(dir / "superblock_only.hdf5", Bytes(valid.begin(), valid.begin() + 96));
}

void cli_seeds(const fs::path& dir) {
  // Arguments separated by NUL bytes, as fuzz_cli splits them.
  auto args = [](std::initializer_list<std::string> list) {
    std::string out;
    for (const std::string& a : list) out += (out.empty() ? "" : std::string(1, '\0')) + a;
    return out;
  };
  spit(dir / "budget_2G", args({"2G"}));
  spit(dir / "budget_fraction", args({"1.5GiB"}));
  spit(dir / "budget_bytes", args({"4096"}));
  spit(dir / "budget_huge", args({"16384T"}));
  spit(dir / "search", args({"search", "--base", "b.fvecs", "--query", "q.fvecs", "-k", "10", "--memory-budget", "2G",
                             "--metric", "cosine", "-o", "out.ivecs"}));
  spit(dir / "search_options", args({"--base", "b.fvecs", "--query", "q.npy", "--memory-budget", "512M", "--select",
                                     "merge_queue+aligned+buffered+hp", "--tang-m", "16", "--tang-group", "8",
                                     "--metric", "lp", "-p", "3", "--threads", "2", "--thread-queue", "4"}));
  spit(dir / "gen", args({"gen", "--rows", "100", "--dim", "8", "-o", "x.fvecs", "--queries", "5", "--queries-out",
                          "q.fvecs", "--groundtruth-out", "gt.ivecs", "--distribution", "clusters"}));
  spit(dir / "recall", args({"recall", "--help"}));
  spit(dir / "bench", args({"bench", "--base", "b.fvecs", "--query", "q.fvecs", "--select", "bits"}));
  spit(dir / "info", args({"info"}));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds <fuzz/corpus directory>\n");
    return 2;
  }
  const fs::path root = argv[1];
  for (const char* sub : {"vecs", "npy", "hdf5", "cli"}) fs::create_directories(root / sub);
  vecs_seeds(root / "vecs");
  npy_seeds(root / "npy");
  hdf5_seeds(root / "hdf5");
  cli_seeds(root / "cli");
  return 0;
}
