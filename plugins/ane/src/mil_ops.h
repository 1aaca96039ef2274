// The MIR primitives the ane target writes as one MIL op of the same meaning (unary and binary
// elementwise ops), and those it lowers otherwise (mil_lowering.cpp); mil_legality.cpp accepts
// exactly these.
#pragma once
#include <map>
#include <set>
#include <string>

namespace rlx::ane {

inline const std::map<std::string, std::string> kUnary = {
    {"exp", "exp"},     {"sqrt", "sqrt"}, {"tanh", "tanh"},        {"sin", "sin"},
    {"cos", "cos"},     {"erf", "erf"},   {"logistic", "sigmoid"}, {"sign", "sign"},
    {"floor", "floor"}, {"ceil", "ceil"}, {"round", "round"},      {"abs", "abs"}};
inline const std::map<std::string, std::string> kBinary = {
    {"add", "add"},     {"sub", "sub"},       {"mul", "mul"},    {"max", "maximum"},
    {"min", "minimum"}, {"pow", "pow"},       {"eq", "equal"},   {"ne", "not_equal"},
    {"lt", "less"},     {"le", "less_equal"}, {"gt", "greater"}, {"ge", "greater_equal"}};
inline const std::set<std::string> kOther = {
    "log",         "rsqrt",    "neg",        "div",        "rem",        "and",
    "or",          "xor",      "not",        "select",     "convert",    "iota",
    "reshape",     "broadcast_in_dim",       "transpose",  "slice",      "concat",
    "pad",         "gather",   "scatter",    "dot_general", "constant",  "dim_size",
    "reduce_sum",  "reduce_max", "reduce_min", "reduce_prod", "bitcast"};

}  // namespace rlx::ane
