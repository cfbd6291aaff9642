// plan_table_test.cpp: the measured plan table Auto consults (src/plan/plan_table.hpp): the format and its errors,
// the nearest-cell rule (device, metric class, data kind, factor limits, usable rows), the table compiled in, and
// $GKNN_PLAN_TABLE.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#include "gknn/error.hpp"
#include "plan/plan_table.hpp"
#include "testing/expect_error.hpp"

namespace gknn::testing {
namespace {

using detail::plan::Cell;
using detail::plan::MetricClass;
using detail::plan::Row;
using detail::plan::Table;

const std::string kTable = std::string("# a comment\n") + std::string(detail::plan::kHeader) +
                           "\r\n"
                           "H100,dot,integer,1000000,10000,128,100,fp16_mma,bits,33.1\n"
                           "H100,dot,float,1000000,10000,128,100,cublas,bits,79.9\n"
                           "H100,dot,integer,16384,4096,128,16,lp_gemm,warp_select,0.61\n"
                           "\n"
                           "H100,l1,float,1000000,10000,128,100,lp_gemm,block_select,120\n"
                           "H200,dot,integer,1000000,10000,128,100,cublas,sort,50\n";

const auto kAny = [](const Row&) { return true; };

// The table compiled into the library (src/plan/plan_table.csv), as the library embeds it.
constexpr std::string_view kBuiltInTable =
#include "plan/plan_table.inc"
    ;

TEST(PlanTable, ParsesRowsCommentsAndCrLf) {
  const Table t = detail::plan::parse_table(kTable, "t.csv");
  ASSERT_EQ(t.rows.size(), 5u);
  const Row& r = t.rows[0];
  EXPECT_EQ(r.device, "H100");
  EXPECT_EQ(r.metric, MetricClass::Dot);
  EXPECT_TRUE(r.integer);
  EXPECT_EQ(r.cell.n, 1000000);
  EXPECT_EQ(r.cell.k, 100);
  EXPECT_EQ(r.distance, DistanceAlgorithm::Fp16Mma);
  EXPECT_EQ(r.select, SelectAlgorithm::Bits);
  EXPECT_DOUBLE_EQ(r.ms, 33.1);
  EXPECT_EQ(r.line, 3);
  EXPECT_EQ(t.rows[3].metric, MetricClass::L1);
  EXPECT_EQ(t.rows[3].line, 7);
  for (const Row& row : t.rows)  // format_row writes what parse_table reads
    EXPECT_EQ(detail::plan::parse_table(std::string(detail::plan::kHeader) + "\n" + detail::plan::format_row(row),
                                        "x")
                  .rows.at(0)
                  .distance,
              row.distance);
  EXPECT_TRUE(detail::plan::parse_table("# only comments\n", "empty").rows.empty());
}

TEST(PlanTable, MalformedRowsNameTheLine) {
  const std::string header = std::string(detail::plan::kHeader) + "\n";
  expect_error([] { detail::plan::parse_table("device,metric\nH100", "bad.csv"); }, ErrorCode::Format,
               {"bad.csv line 1", "header"});
  expect_error([&] { detail::plan::parse_table(header + "H100,dot,integer,1,2,3", "bad.csv"); }, ErrorCode::Format,
               {"bad.csv line 2", "10 comma-separated fields"});
  expect_error([&] { detail::plan::parse_table(header + "\nH100,l3,float,1,2,3,4,cublas,bits,1", "bad.csv"); },
               ErrorCode::Format, {"line 3", "'l3'"});
  expect_error([&] { detail::plan::parse_table(header + "H100,dot,double,1,2,3,4,cublas,bits,1", "b"); },
               ErrorCode::Format, {"'double'"});
  expect_error([&] { detail::plan::parse_table(header + "H100,dot,float,1e6,2,3,4,cublas,bits,1", "b"); },
               ErrorCode::Format, {"n '1e6'"});
  expect_error([&] { detail::plan::parse_table(header + "H100,dot,float,0,2,3,4,cublas,bits,1", "b"); },
               ErrorCode::Format, {"positive"});
  expect_error([&] { detail::plan::parse_table(header + "H100,dot,float,1,2,3,4,magic,bits,1", "b"); },
               ErrorCode::Format, {"line 2", "magic"});
  expect_error([&] { detail::plan::parse_table(header + "H100,dot,float,1,2,3,4,cublas,bits,fast", "b"); },
               ErrorCode::Format, {"ms 'fast'"});
}

TEST(PlanTable, NearestRowOfTheDeviceMetricAndData) {
  const Table t = detail::plan::parse_table(kTable, "t.csv");
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  // The SIFT1M shape itself, and a cell within the factors (n / 2, q * 3, d * 1.5, k / 2).
  const Row* r = detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{1000000, 10000, 128, 100}, kAny);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->distance, DistanceAlgorithm::Fp16Mma);
  r = detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{500000, 30000, 192, 50}, kAny);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->line, 3);
  // Garcia's shape is nearer to its own row.
  r = detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{16384, 4096, 128, 16}, kAny);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->distance, DistanceAlgorithm::LpGemm);
  // Data kind, metric class and device select the rows; the H200 row is not the H100's.
  EXPECT_EQ(detail::plan::nearest(t, h100, MetricClass::Dot, false, Cell{1000000, 10000, 128, 100}, kAny)->distance,
            DistanceAlgorithm::Cublas);
  EXPECT_EQ(detail::plan::nearest(t, h100, MetricClass::L1, false, Cell{1000000, 10000, 128, 100}, kAny)->select,
            SelectAlgorithm::BlockSelect);
  EXPECT_EQ(detail::plan::nearest(t, h100, MetricClass::Linf, false, Cell{1000000, 10000, 128, 100}, kAny), nullptr);
  EXPECT_EQ(detail::plan::nearest(t, "NVIDIA H200", MetricClass::Dot, true, Cell{1000000, 10000, 128, 100}, kAny)
                ->select,
            SelectAlgorithm::Sort);
  EXPECT_EQ(detail::plan::nearest(t, "Tesla V100", MetricClass::Dot, true, Cell{1000000, 10000, 128, 100}, kAny),
            nullptr);
  // Beyond the factors (k * 4, d / 4, n * 8): the rules decide.
  EXPECT_EQ(detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{1000000, 10000, 128, 400}, kAny), nullptr);
  EXPECT_EQ(detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{1000000, 10000, 32, 100}, kAny), nullptr);
  EXPECT_EQ(detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{8000000, 10000, 128, 100}, kAny), nullptr);
  // A row whose algorithms cannot run here is passed over for the next nearest usable one.
  r = detail::plan::nearest(t, h100, MetricClass::Dot, true, Cell{1000000, 10000, 128, 100},
                            [](const Row& row) { return row.distance != DistanceAlgorithm::Fp16Mma; });
  EXPECT_EQ(r, nullptr);  // the Garcia row is too far (n / 61): nothing applies
  const std::string why = detail::plan::describe(t.rows[0], t);
  EXPECT_NE(why.find("measured: fastest at n=1000000, q=10000, d=128, k=100 on H100 (33.1 ms; t.csv line 3)"),
            std::string::npos)
      << why;
}

// A row's pair was measured together: a forced half takes the other half only from a row that has it too.
TEST(PlanTable, ARowFillsAnAutoHalfOnlyBesideItsOwnOtherHalf) {
  const Table t = detail::plan::parse_table(kTable, "t.csv");
  const Row& fp16_bits = t.rows[0];
  using D = DistanceAlgorithm;
  using S = SelectAlgorithm;
  EXPECT_TRUE(detail::plan::pairs_with(fp16_bits, D::Auto, S::Auto));
  EXPECT_TRUE(detail::plan::pairs_with(fp16_bits, D::Fp16Mma, S::Auto));
  EXPECT_TRUE(detail::plan::pairs_with(fp16_bits, D::Auto, S::Bits));
  EXPECT_FALSE(detail::plan::pairs_with(fp16_bits, D::Naive, S::Auto));  // bits was measured behind fp16_mma only
  EXPECT_FALSE(detail::plan::pairs_with(fp16_bits, D::Auto, S::Sort));
  // A fused row selects nothing itself (`auto`): its distance serves a request with any selection.
  Row fused = fp16_bits;
  fused.distance = D::Fused;
  fused.select = S::Auto;
  EXPECT_TRUE(detail::plan::pairs_with(fused, D::Auto, S::Sort));
  EXPECT_FALSE(detail::plan::pairs_with(fused, D::Naive, S::Auto));
  // As Auto filters the rows: a forced naive distance finds no row of the SIFT1M shape here, so the rules decide.
  const auto naive_auto = [](const Row& r) { return detail::plan::pairs_with(r, D::Naive, S::Auto); };
  EXPECT_EQ(detail::plan::nearest(t, "NVIDIA H100", MetricClass::Dot, true, Cell{1000000, 10000, 128, 100}, naive_auto),
            nullptr);
}

TEST(PlanTable, MetricClasses) {
  EXPECT_EQ(detail::plan::metric_class(Metric::SquaredL2), MetricClass::Dot);
  EXPECT_EQ(detail::plan::metric_class(Metric::InnerProduct), MetricClass::Dot);
  EXPECT_EQ(detail::plan::metric_class(Metric::L1), MetricClass::L1);
  EXPECT_EQ(detail::plan::metric_class(Metric::Linf), MetricClass::Linf);
  EXPECT_EQ(detail::plan::metric_class(Metric::Lp), MetricClass::Lp);
}

TEST(PlanTable, TheBuiltInTableParsesAndTheEnvironmentReplacesIt) {
  const std::string path = ::testing::TempDir() + "gknn_plan_table_test.csv";
  {
    std::ofstream out(path);
    out << kTable;
  }
  // The compiled-in table must parse (a malformed checked-in table would fail every Auto search on a GPU).
  EXPECT_NO_THROW(detail::plan::parse_table(kBuiltInTable, "built in"));
  ::setenv("GKNN_PLAN_TABLE", path.c_str(), 1);
  const Table& t = detail::plan::active_table();
  ::unsetenv("GKNN_PLAN_TABLE");
  EXPECT_EQ(t.source, path);
  EXPECT_EQ(t.rows.size(), 5u);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace gknn::testing
