// Writing --json output. rlx::json has the value tree and the string quoter; this adds builders
// for values and a printer, so commands assemble a json::Value and print it in one place.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "rlx/core/json.h"

namespace rlx::cli {

json::Value jstring(std::string_view s);
json::Value jint(int64_t v);
json::Value jnumber(double v);         // the shortest text that reads back as v
json::Value jms(double milliseconds);  // a duration, three decimals
json::Value jnull();

// Two-space indented JSON; containers holding only scalars stay on one line when short.
std::string to_json_text(const json::Value& v);
// All on one line, for output that is one JSON value per line (rlx chat --json).
std::string to_json_line(const json::Value& v);

}  // namespace rlx::cli
