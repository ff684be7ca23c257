// Runs real ops through an installed scatterkit and checks the results.
// Exit code 0 when everything matches, 1 otherwise.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <scatterkit/scatterkit.hpp>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  std::printf("  %-58s %s\n", what, ok ? "ok" : "MISMATCH");
  if (!ok) ++failures;
}

}  // namespace

int main() {
  namespace sk = scatterkit;
  std::printf("scatterkit consumer: headers %s, package %s, %d thread(s)\n", SCATTERKIT_VERSION,
              SCATTERKIT_PACKAGE_VERSION, sk::get_num_threads());
  check(std::strcmp(SCATTERKIT_VERSION, SCATTERKIT_PACKAGE_VERSION) == 0,
        "header version equals the package config version");
  char numeric[32];
  std::snprintf(numeric, sizeof numeric, "%d.%d.%d", SCATTERKIT_VERSION_MAJOR,
                SCATTERKIT_VERSION_MINOR, SCATTERKIT_VERSION_PATCH);
  check(std::strcmp(numeric, SCATTERKIT_PACKAGE_VERSION) == 0 &&
            SCATTERKIT_VERSION_NUMBER == SCATTERKIT_VERSION_MAJOR * 10000 +
                                             SCATTERKIT_VERSION_MINOR * 100 +
                                             SCATTERKIT_VERSION_PATCH,
        "numeric version macros equal the package config version");

  // ScatterUpdate-3 on a 1024 x 256 float matrix (1 MiB, threaded when OpenMP
  // is on): rows 3 and 1000 replaced, the rest copied.
  {
    const int64_t rows = 1024, cols = 256;
    std::vector<float> data(size_t(rows * cols)), out(data.size());
    for (size_t i = 0; i < data.size(); ++i) data[i] = float(i);
    const std::vector<int64_t> indices = {1000, 3};
    std::vector<float> updates(size_t(2 * cols));
    for (size_t i = 0; i < updates.size(); ++i) updates[i] = -float(i);
    sk::set_num_threads(2);
    sk::scatter_update<float, int64_t>({data.data(), {rows, cols}}, {indices.data(), {2}},
                                       {updates.data(), {2, cols}}, 0, {out.data(), {rows, cols}});
    bool ok = true;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {
        const float want = r == 1000 ? -float(c) : r == 3 ? -float(cols + c) : float(r * cols + c);
        ok = ok && out[size_t(r * cols + c)] == want;
      }
    check(ok, "scatter_update, 1024 x 256 float, 2 rows");
  }

  // SliceScatter-15, the spec's example 2: every second value on axis 1,
  // start -25 and stop 25 clamped.
  {
    const std::vector<float> data = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    const std::vector<float> updates = {10, 20, 30, 40, 50, 60};
    std::vector<float> out(10);
    sk::slice_scatter<float>({data.data(), {2, 5}}, {updates.data(), {2, 3}}, -25, 25, 2, 1,
                             {out.data(), {2, 5}});
    check(out == std::vector<float>{10, 1, 20, 3, 30, 40, 6, 50, 8, 60},
          "slice_scatter, spec example 2");
  }

  // An error comes out as the documented exception type with a NumPy-style message.
  {
    const std::vector<int32_t> data = {1, 2, 3};
    const std::vector<int64_t> indices = {7};
    const std::vector<int32_t> updates = {9};
    std::vector<int32_t> out = {0, 0, 0};
    bool ok = false;
    try {
      sk::scatter_update<int32_t, int64_t>({data.data(), {3}}, {indices.data(), {1}},
                                           {updates.data(), {1}}, 0, {out.data(), {3}});
    } catch (const sk::IndexError& e) {
      ok = std::strstr(e.what(), "index 7 is out of bounds for axis 0 with size 3") != nullptr;
    }
    check(ok && out == std::vector<int32_t>{0, 0, 0}, "IndexError for index 7, output untouched");
  }

  std::printf("scatterkit consumer: %s\n", failures == 0 ? "all checks passed" : "FAILED");
  return failures == 0 ? 0 : 1;
}
