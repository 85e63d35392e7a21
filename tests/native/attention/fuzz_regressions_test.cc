// Runs every committed fuzz input (tests/fuzz/corpus: seeds and the inputs of
// past crashes) through the fuzz target's entry point, in every build of the
// native suite (plain, and ASan + UBSan). The target traps on any mismatch.

#include <stddef.h>
#include <stdint.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

TEST(FuzzRegressions, CommittedInputsPass) {
  const std::filesystem::path dir =
      std::filesystem::path(CA_SOURCE_DIR) / "tests" / "fuzz" / "corpus";
  size_t count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    std::ifstream file(entry.path(), std::ios::binary);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)),
                                     std::istreambuf_iterator<char>());
    SCOPED_TRACE(entry.path().string());
    EXPECT_EQ(LLVMFuzzerTestOneInput(bytes.data(), bytes.size()), 0);
    ++count;
  }
  EXPECT_GT(count, 0u) << "no committed fuzz inputs in " << dir;
}

}  // namespace
