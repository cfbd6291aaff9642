// consumer.cpp: the smallest program a gknn user writes; exits 0 when the search answers correctly.
#include <cstdio>

#include <gknn/gknn.hpp>

int main() {
  const float base[] = {0, 0, 10, 10, 1, 1, 5, 5};  // four 2-D points
  const float query[] = {0.9f, 0.9f};
  gknn::SearchParams params;
  params.k = 2;
  params.backend = gknn::Backend::Cpu;
  const gknn::Result r = gknn::search(gknn::FloatView{base, 4, 2}, gknn::FloatView{query, 1, 2}, params);
  const bool ok = r.index(0, 0) == 2 && r.index(0, 1) == 0;
  std::printf("consumer: gknn %s, neighbours %lld %lld: %s\n", gknn::build_info().version.c_str(),
              static_cast<long long>(r.index(0, 0)), static_cast<long long>(r.index(0, 1)), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
