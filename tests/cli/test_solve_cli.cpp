// `rlx solve` end to end: a 2D Poisson system written as Matrix Market files, solved by lu, cg
// and pcg; the residual it prints is checked against the bound, and --json against the text.
#include "cli_fixture.h"

namespace rlx::cli {
namespace {

class SolveCli : public CliTest {
 protected:
  // The 5-point Laplacian of a g x g grid, as a symmetric Matrix Market file (lower triangle).
  fs::path poisson(int g) {
    std::string body;
    int entries = 0;
    for (int y = 0; y < g; ++y)
      for (int x = 0; x < g; ++x) {
        const int i = y * g + x + 1;
        body += fmt::format("{} {} 4\n", i, i), ++entries;
        if (x > 0) body += fmt::format("{} {} -1\n", i, i - 1), ++entries;
        if (y > 0) body += fmt::format("{} {} -1\n", i, i - g), ++entries;
      }
    return write("a.mtx",
                 fmt::format("%%MatrixMarket matrix coordinate real symmetric\n{} {} {}\n{}", g * g,
                             g * g, entries, body));
  }
};

double number(const json::Value& j, const char* key) {
  const json::Value* v = j.find(key);
  return v && v->as_number() ? std::stod(v->as_number()->raw) : -1;
}

TEST_F(SolveCli, LuKluCgAndPcgSolvePoisson) {
  fs::path a = poisson(10);
  for (const char* method : {"lu", "klu", "cg", "pcg"}) {
    ProcessResult r = rlx({"solve", a.string(), "--method", method, "--json"});
    ASSERT_EQ(r.exit_code, 0) << dump(r);
    json::Value j = parse_json(r);
    EXPECT_LT(number(j, "residual"), 1e-9) << dump(r);
    EXPECT_EQ(number(j, "rows"), 100);
    EXPECT_EQ(number(j, "nnz"), 460);  // 100 diagonal + 2 * 180 neighbours
    if (std::string(method) != "lu" && std::string(method) != "klu") {
      EXPECT_GT(number(j, "iterations"), 5) << dump(r);
    }
  }
  ProcessResult t = rlx({"solve", a.string(), "--method", "cg", "--tol", "1e-8"});
  ASSERT_EQ(t.exit_code, 0) << dump(t);
  EXPECT_THAT(t.out, HasSubstr("iterations: "));
  EXPECT_THAT(t.out, HasSubstr("residual ||Ax-b||/||b||: "));
}

TEST_F(SolveCli, ARightHandSideFileAndAnIterationLimit) {
  fs::path a = poisson(6);
  std::string rhs = "%%MatrixMarket matrix array real general\n36 1\n";
  for (int i = 0; i < 36; ++i) rhs += fmt::format("{}\n", i % 5);
  fs::path b = write("b.mtx", rhs);
  ProcessResult r = rlx({"solve", a.string(), "--rhs", b.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_LT(number(parse_json(r), "residual"), 1e-12);
  ProcessResult capped = rlx({"solve", a.string(), "--method", "cg", "--max-iter", "2"});
  EXPECT_EQ(capped.exit_code, 3) << dump(capped);
  EXPECT_THAT(capped.out, HasSubstr("iteration limit reached"));
}

TEST_F(SolveCli, BadInputsSayWhatIsWrong) {
  fs::path a = poisson(4);
  ProcessResult r = rlx({"solve", a.string(), "--method", "qr"});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("--method qr is not one of lu, klu, cg, pcg"));
  fs::path bad = write("bad.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n3 1 1\n");
  r = rlx({"solve", bad.string()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("bad.mtx:3"));
  fs::path singular =
      write("s.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1\n2 1 1\n");
  for (const char* method : {"lu", "klu"}) {
    r = rlx({"solve", singular.string(), "--method", method});
    EXPECT_NE(r.exit_code, 0) << method;
    EXPECT_THAT(r.err, HasSubstr("singular")) << method;
  }
  ProcessResult help = rlx({"solve", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("--method"));
}

}  // namespace
}  // namespace rlx::cli
