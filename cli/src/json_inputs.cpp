#include "json_inputs.h"

#include <fmt/format.h>

#include <fstream>
#include <iterator>

#include "errors.h"
#include "rlx/core/json.h"

namespace rlx::cli {
namespace {

constexpr const char* kFormatHint =
    "write one member per input: {\"NAME\": [[1, 2], [3, 4]]} or "
    "{\"NAME\": {\"dtype\": \"i64\", \"shape\": [2, 2], \"data\": [1, 2, 3, 4]}}";

[[noreturn]] void fail(const std::string& where, const std::string& why) {
  throw CliError(fmt::format("{}: {}", where, why), kFormatHint);
}

// The shape nested lists have, read along their first elements; flatten() then checks that
// every other list agrees.
std::vector<int64_t> nesting_shape(const json::Value& v) {
  std::vector<int64_t> shape;
  const json::Value* at = &v;
  while (const json::Array* a = at->as_array()) {
    shape.push_back(static_cast<int64_t>(a->size()));
    if (a->empty()) break;
    at = &a->front();
  }
  return shape;
}

// The numbers of `v` in row-major order; `index` names the list being read ("[1][0]").
void flatten(const json::Value& v, const std::vector<int64_t>& shape, size_t depth,
             const std::string& where, const std::string& index, std::vector<std::string>& out) {
  const std::string what = index.empty() ? "the value" : "item " + index;
  if (depth < shape.size()) {
    const json::Array* a = v.as_array();
    if (!a || static_cast<int64_t>(a->size()) != shape[depth])
      fail(where,
           fmt::format("{} is {} where a list of {} belongs; nested lists must be "
                       "rectangular (their nesting gives the shape)",
                       what, a ? fmt::format("a list of {}", a->size()) : std::string(v.kind()),
                       shape[depth]));
    for (size_t i = 0; i < a->size(); ++i)
      flatten((*a)[i], shape, depth + 1, where, fmt::format("{}[{}]", index, i), out);
  } else if (const json::Number* n = v.as_number()) {
    out.push_back(n->raw);
  } else if (const bool* b = v.as_bool()) {
    out.push_back(*b ? "true" : "false");
  } else {
    fail(where, fmt::format("{} is {} where a number belongs{}", what, v.kind(),
                            v.as_array() ? "; nested lists must be rectangular" : ""));
  }
}

// {"dtype": "i64", "shape": [2, 8], "data": [...]}
WrittenValues described_values(const json::Object& o, const std::string& where) {
  WrittenValues w;
  w.where = where;
  const json::Value* data = nullptr;
  for (const auto& [key, value] : o) {
    if (key == "dtype") {
      const std::string* name = value.as_string();
      if (!name) fail(where, "\"dtype\" is not a string");
      w.dtype = parse_dtype(*name);
      if (!w.dtype)
        fail(where, fmt::format("\"dtype\" '{}' is not an rlx dtype (bool, i8, u8, i16, u16, "
                                "i32, u32, i64, u64, f16, bf16, f32, f64)",
                                *name));
    } else if (key == "shape") {
      const json::Array* dims = value.as_array();
      if (!dims) fail(where, "\"shape\" is not a list of sizes");
      w.shape.emplace();
      for (const json::Value& d : *dims) {
        const json::Number* n = d.as_number();
        std::optional<int64_t> size = n ? n->as_i64() : std::nullopt;
        if (!size || *size < 0 || *size > (int64_t{1} << 40))
          fail(where, "\"shape\" holds something other than sizes (integers >= 0)");
        w.shape->push_back(*size);
      }
    } else if (key == "data") {
      data = &value;
    } else {
      fail(where, fmt::format("unknown key \"{}\" (an input object has \"dtype\", \"shape\" and "
                              "\"data\")",
                              key));
    }
  }
  if (!data) fail(where, "has no \"data\"");
  flatten(*data, nesting_shape(*data), 0, where, "", w.literals);
  if (!w.shape) w.shape = nesting_shape(*data);
  return w;
}

}  // namespace

std::map<std::string, WrittenValues> read_json_inputs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CliError(fmt::format("cannot read {}", path), "check that the file is readable");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  json::Value doc;
  try {
    doc = json::parse(text);
  } catch (const std::exception& e) {
    throw CliError(fmt::format("{} is not valid JSON: {}", path, e.what()), kFormatHint);
  }
  const json::Object* members = doc.as_object();
  if (!members)
    throw CliError(fmt::format("{} holds a JSON {}, not an object of inputs", path, doc.kind()),
                   kFormatHint);
  std::map<std::string, WrittenValues> inputs;
  for (const auto& [name, value] : *members) {
    const std::string where = fmt::format("{} entry '{}'", path, name);
    WrittenValues w;
    if (const json::Object* o = value.as_object()) {
      w = described_values(*o, where);
    } else {
      w.where = where;
      w.shape = nesting_shape(value);
      flatten(value, *w.shape, 0, where, "", w.literals);
    }
    if (!inputs.emplace(name, std::move(w)).second)
      fail(where, "is given twice; give each input once");
  }
  return inputs;
}

}  // namespace rlx::cli
