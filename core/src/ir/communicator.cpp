#include "rlx/core/communicator.h"

#include <fmt/format.h>

#include "rlx/core/error.h"

namespace rlx {

std::optional<Communicator> parse_communicator(const std::string& text) {
  if (text == "world") return Communicator{};
  for (auto [prefix, kind] : {std::pair{"block:", Communicator::Kind::kBlock},
                              std::pair{"stride:", Communicator::Kind::kStride}}) {
    const std::string p(prefix);
    if (text.rfind(p, 0) != 0) continue;
    const std::string digits = text.substr(p.size());
    if (digits.empty() || digits.size() > 6 ||
        digits.find_first_not_of("0123456789") != std::string::npos)
      return std::nullopt;
    const int64_t n = std::stoll(digits);
    if (n < 1) return std::nullopt;
    return Communicator{kind, n};
  }
  return std::nullopt;
}

std::string Communicator::name() const {
  if (kind == Kind::kWorld) return "world";
  return fmt::format("{}:{}", kind == Kind::kBlock ? "block" : "stride", n);
}

int32_t Communicator::group_size(int32_t world) const {
  if (kind == Kind::kWorld) return world;
  if (world % n != 0)
    throw_user_error(fmt::format(
        "communicator \"{}\" splits the job's ranks into groups of {}, and {} ranks do not "
        "divide evenly: start a multiple of {} ranks",
        name(),
        kind == Kind::kBlock ? fmt::format("{} consecutive ranks", n)
                             : fmt::format("every {}th rank", n),
        world, n));
  return static_cast<int32_t>(kind == Kind::kBlock ? n : world / n);
}

std::vector<int32_t> Communicator::group_of(int32_t rank, int32_t world) const {
  const int32_t size = group_size(world);
  std::vector<int32_t> ranks;
  for (int32_t i = 0; i < size; ++i) {
    if (kind == Kind::kWorld) ranks.push_back(i);
    if (kind == Kind::kBlock) ranks.push_back(static_cast<int32_t>(rank / n * n + i));
    if (kind == Kind::kStride) ranks.push_back(static_cast<int32_t>(rank % n + i * n));
  }
  return ranks;
}

}  // namespace rlx
