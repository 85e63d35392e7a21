// Reading the golden files of tests/data/ (JSON, one case per line, written
// by the wasm build) in native tests: a case line's fields and hex floats.

#ifndef CAUSAL_ATTENTION_TESTS_NATIVE_GOLDEN_FILE_H_
#define CAUSAL_ATTENTION_TESTS_NATIVE_GOLDEN_FILE_H_

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <fstream>
#include <string>
#include <vector>

namespace causal_attention {
namespace int8_rows_cases {

// The field `key` of a golden file's case line ("key": "..." or "key":
// a number, true or false; a space after the colon or not), or "" when
// absent.
inline std::string Field(const std::string& line, const std::string& key) {
  const std::string tag = "\"" + key + "\":";
  const size_t at = line.find(tag);
  if (at == std::string::npos) return "";
  size_t begin = at + tag.size();
  while (line[begin] == ' ') ++begin;
  if (line[begin] == '"') {
    ++begin;
    return line.substr(begin, line.find('"', begin) - begin);
  }
  const size_t end = line.find_first_of(",}", begin);
  return line.substr(begin, end - begin);
}

// The lines of a golden file in tests/data/ that hold a case.
inline std::vector<std::string> GoldenLines(const char* name) {
  std::ifstream file(std::string(CA_SOURCE_DIR) + "/tests/data/" + name);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(file, line)) {
    if (line.find("\"name\":") != std::string::npos) lines.push_back(line);
  }
  return lines;
}

// Floats from a hex string of 8 digits per value (their bits).
inline std::vector<float> HexFloats(const std::string& hex) {
  std::vector<float> out;
  for (size_t i = 0; i + 8 <= hex.size(); i += 8) {
    const uint32_t bits =
        static_cast<uint32_t>(strtoul(hex.substr(i, 8).c_str(), nullptr, 16));
    float x;
    memcpy(&x, &bits, sizeof(x));
    out.push_back(x);
  }
  return out;
}

}  // namespace int8_rows_cases
}  // namespace causal_attention

#endif  // CAUSAL_ATTENTION_TESTS_NATIVE_GOLDEN_FILE_H_
