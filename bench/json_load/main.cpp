// Time to parse one JSON file with rlx::json::parse (the reader behind tokenizer.json, config.json
// and safetensors headers): the file is read once, then parsed `runs` times; prints the median
// and the fastest run. Not a test and not in `all`:
//   cmake --build build --target rlx_bench_json_load
//   python3 bench/json_load/make_tokenizer_json.py tests/data/gguf /tmp/tokenizer.json
//   build/bench/json_load/rlx_bench_json_load /tmp/tokenizer.json 15
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "rlx/core/json.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} FILE.json [runs]\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) {
    fmt::print(stderr, "{}: cannot open\n", argv[1]);
    return 1;
  }
  std::string text((std::istreambuf_iterator<char>(in)), {});
  const int runs = argc > 2 ? std::max(1, std::atoi(argv[2])) : 15;
  std::vector<double> ms;
  size_t members = 0;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    rlx::json::Value v = rlx::json::parse(text);
    ms.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    // Uses the result so the parse cannot be dropped; also a sanity line for the reader.
    members = v.as_object() ? v.as_object()->size() : 0;
  }
  std::sort(ms.begin(), ms.end());
  fmt::print("{}: {:.2f} MB, {} top-level members; {} runs: median {:.1f} ms, min {:.1f} ms\n",
             argv[1], text.size() / 1e6, members, runs, ms[ms.size() / 2], ms.front());
  return 0;
}
