// The ways of giving `rlx run` and `rlx bench` their inputs beside safetensors: numpy .npz (stored
// and deflated) and .npy files, JSON files, --input NAME=VALUES with --input-shape, and bench
// --save-inputs; and what `rlx run` prints when it writes no file. Every value is checked against
// one worked out by hand. The numpy files are tests/data/numpy's (make_inputs.py there).
#include "cli_fixture.h"
#include "rlx/core/safetensors.h"

namespace rlx::cli {
namespace {

const fs::path kNumpy = RLX_NUMPY_DIR;

class InputFormsCliTest : public CliTest {
 protected:
  // ids and positions as a decoder takes them, beside a scalar: y = ids + ids, z = m + m,
  // s = t * t.
  fs::path mixed_model() {
    return write("mixed.rlx",
                 "graph @mixed(%ids: i64[3], %m: u8[3], %t: f32[]) {\n"
                 "  %y = Add(%ids, %ids) : i64[3]\n"
                 "  %z = Add(%m, %m) : u8[3]\n"
                 "  %s = Mul(%t, %t) : f32[]\n"
                 "  return %y, %z, %s\n"
                 "}\n");
  }

  // rlx run with `args` after the model and target; the outputs go to out.safetensors.
  ProcessResult run(const fs::path& model, std::vector<std::string> args) {
    args.insert(args.begin(), {"run", model.string(), "--target", "cpu"});
    return rlx(args);
  }
  TensorMap run_to_file(const fs::path& model, std::vector<std::string> args) {
    args.insert(args.end(), {"--output", (dir_ / "out.safetensors").string()});
    ProcessResult r = run(model, args);
    EXPECT_EQ(r.exit_code, 0) << dump(r);
    if (r.exit_code != 0) return {};
    return read_safetensors(dir_ / "out.safetensors");
  }

  static void expect_f32(const TensorMap& out, const std::string& name,
                         const std::vector<int64_t>& shape, const std::vector<float>& values) {
    ASSERT_TRUE(out.count(name)) << name;
    const Tensor& t = out.at(name);
    ASSERT_EQ(t.dtype(), DType::kF32) << name;
    ASSERT_EQ(t.shape(), shape) << name;
    for (size_t i = 0; i < values.size(); ++i)
      EXPECT_FLOAT_EQ(t.as<float>()[i], values[i]) << name << " element " << i;
  }

  // The error of a run that must fail with exit code 1, a hint, and nothing on stdout.
  std::string user_error(const fs::path& model, std::vector<std::string> args) {
    ProcessResult r = run(model, std::move(args));
    EXPECT_EQ(r.exit_code, 1) << dump(r);
    EXPECT_THAT(r.err, StartsWith("rlx: error: ")) << dump(r);
    EXPECT_THAT(r.err, HasSubstr("\nhint: ")) << dump(r);
    EXPECT_TRUE(r.out.empty()) << dump(r);
    return r.err;
  }

  std::string npy(const char* name) { return (kNumpy / name).string(); }
};

// x = [[1, 2, 3], [4, 5, 6]] in every file; y = (x + w) * x.
TEST_F(InputFormsCliTest, NpzStoredAsNpSavezWritesIt) {
  // w = ones: y = (x + 1) * x.
  expect_f32(run_to_file(small_model(), {"--inputs", npy("small_stored.npz")}), "y", {2, 3},
             {2, 6, 12, 20, 30, 42});
}

TEST_F(InputFormsCliTest, NpzDeflatedAsNpSavezCompressedWritesIt) {
  // w = 0.5: y = (x + 0.5) * x.
  expect_f32(run_to_file(small_model(), {"--inputs", npy("small_compressed.npz")}), "y", {2, 3},
             {1.5f, 5, 10.5f, 18, 27.5f, 39});
}

TEST_F(InputFormsCliTest, NpzOfEveryNumpyDtypeKeepsEachValue) {
  fs::path model = write("dtypes.rlx",
                         "graph @d(%a: f16[2], %b: f64[2], %c: i16[2], %d: i8[2], %e: u8[2], "
                         "%f: bool[2], %g: i32[2], %h: i64[2]) {\n"
                         "  %a2 = Add(%a, %a) : f16[2]\n"
                         "  %b2 = Add(%b, %b) : f64[2]\n"
                         "  %c2 = Add(%c, %c) : i16[2]\n"
                         "  %d2 = Add(%d, %d) : i8[2]\n"
                         "  %e2 = Add(%e, %e) : u8[2]\n"
                         "  %f2 = Where(%f, %c2, %c) : i16[2]\n"
                         "  %g2 = Add(%g, %g) : i32[2]\n"
                         "  %h2 = Add(%h, %h) : i64[2]\n"
                         "  return %a2, %b2, %c2, %d2, %e2, %f2, %g2, %h2\n"
                         "}\n");
  // The same values through the file and through --input must print the same.
  ProcessResult file = run(model, {"--inputs", npy("dtypes.npz")});
  ASSERT_EQ(file.exit_code, 0) << dump(file);
  EXPECT_EQ(file.out,
            "outputs:\n"
            "  a2 f16[2]: [3, -0.5]\n"
            "  b2 f64[2]: [0.2, 2e+300]\n"
            "  c2 i16[2]: [-600, 14]\n"
            "  d2 i8[2]: [56, 10]\n"  // -200 wraps to 56 in i8, as numpy's int8 does
            "  e2 u8[2]: [200, 14]\n"
            "  f2 i16[2]: [-600, 7]\n"  // f = [true, false] picks c2 then c
            "  g2 i32[2]: [-10, -2147483648]\n"
            "  h2 i64[2]: [2199023255552, -6]\n")
      << dump(file);
  ProcessResult typed =
      run(model, {"--input", "a=1.5,-0.25", "--input", "b=0.1,1e300", "--input", "c=-300,7",
                  "--input", "d=-100,5", "--input", "e=100,7", "--input", "f=true,0", "--input",
                  "g=-5,1073741824", "--input", "h=1099511627776,-3"});
  ASSERT_EQ(typed.exit_code, 0) << dump(typed);
  EXPECT_EQ(typed.out, file.out);
}

TEST_F(InputFormsCliTest, ACorruptNpzMemberIsAnErrorNamingIt) {
  std::ifstream in(npy("small_stored.npz"), std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // The last byte of the first member's data (x's 6.0f): its CRC-32 no longer matches.
  const size_t x_end = bytes.find("PK\x03\x04", 4) - 1;
  bytes[x_end] ^= 0x01;
  fs::path bad = dir_ / "bad.npz";
  std::ofstream(bad, std::ios::binary) << bytes;
  EXPECT_THAT(user_error(small_model(), {"--inputs", bad.string()}),
              HasSubstr("bad.npz member 'x.npy' is corrupt: its CRC-32 does not match"));
  std::ofstream(bad, std::ios::binary) << "PK not really";
  EXPECT_THAT(user_error(small_model(), {"--inputs", bad.string()}),
              HasSubstr("bad.npz is not a readable zip (.npz) archive"));
}

TEST_F(InputFormsCliTest, NpyFortranBigEndianOrStringsAreErrorsNamingTheFile) {
  EXPECT_THAT(user_error(small_model(), {"--input", "x=@" + npy("x_fortran.npy"), "--input",
                                         "w=@" + npy("x_f32.npy")}),
              HasSubstr("x_fortran.npy is in Fortran (column-major) order"));
  EXPECT_THAT(user_error(small_model(), {"--input", "x=@" + npy("x_big_endian.npy"), "--input",
                                         "w=@" + npy("x_f32.npy")}),
              HasSubstr("x_big_endian.npy is big-endian ('>f4')"));
  EXPECT_THAT(user_error(small_model(), {"--input", "x=@" + npy("strings.npy")}),
              HasSubstr("strings.npy has dtype '<U2', which rlx does not take"));
  EXPECT_THAT(user_error(small_model(), {"--input", "x=@" + (dir_ / "absent.npy").string()}),
              HasSubstr("absent.npy' does not exist"));
}

TEST_F(InputFormsCliTest, OneNpyIsNotAnInputsFile) {
  EXPECT_THAT(user_error(small_model(), {"--inputs", npy("x_f32.npy")}),
              HasSubstr("x_f32.npy is a .npy file, which holds one array"));
  fs::path txt = write("in.txt", "x=1");
  EXPECT_THAT(user_error(small_model(), {"--inputs", txt.string()}),
              HasSubstr("its extension is not .safetensors, .npz or .json"));
}

TEST_F(InputFormsCliTest, JsonNestedListsGiveTheShapeAndTheInputTheDtype) {
  fs::path in =
      write("in.json", R"({"x": [[1, 2, 3], [4, 5, 6]], "w": [[1, 1, 1], [-1, 0, 0.5]]})");
  expect_f32(run_to_file(small_model(), {"--inputs", in.string()}), "y", {2, 3},
             {2, 6, 12, 12, 25, 39});
  // A bare number is a scalar; integers become the i64 and u8 the model takes.
  fs::path mixed = write("mixed.json", R"({"ids": [1, 2, 3], "m": [7, 8, 9], "t": -1.5})");
  ProcessResult r = run(mixed_model(), {"--inputs", mixed.string()});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(r.out,
            "outputs:\n"
            "  y i64[3]: [2, 4, 6]\n"
            "  z u8[3]: [14, 16, 18]\n"
            "  s f32[]: 2.25\n")
      << dump(r);
}

TEST_F(InputFormsCliTest, JsonObjectsStateDtypeAndShape) {
  // i32 ids are widened to the model's i64 as from any file; a flat "data" takes "shape".
  fs::path in = write("in.json", R"({"ids": {"dtype": "i32", "shape": [3], "data": [1, 2, 70000]},
                                    "m": {"data": [1, 2, 3]}, "t": {"shape": [], "data": 3}})");
  ProcessResult r = run(mixed_model(), {"--inputs", in.string(), "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: note: input 'ids' is i32 in " + in.string())) << dump(r);
  json::Value doc = parse_json(r);
  const json::Value* y = find_named(*doc.find("outputs"), "y");
  ASSERT_TRUE(y && y->find("values")) << dump(r);
  const json::Array* values = y->find("values")->as_array();
  ASSERT_TRUE(values && values->size() == 3) << dump(r);
  EXPECT_EQ((*values)[2].as_number()->raw, "140000");
  const json::Value* s = find_named(*doc.find("outputs"), "s");
  ASSERT_TRUE(s && s->find("values") && s->find("values")->as_number()) << dump(r);
  EXPECT_EQ(s->find("values")->as_number()->raw, "9");

  fs::path wrong = write("shape.json", R"({"x": {"shape": [2, 2], "data": [1, 2, 3]}})");
  EXPECT_THAT(user_error(small_model(), {"--inputs", wrong.string()}),
              HasSubstr("entry 'x': 3 values are given for shape [2,2], which holds 4"));
  fs::path typo = write("typo.json", R"({"x": {"dtpye": "f32", "data": [1]}})");
  EXPECT_THAT(user_error(small_model(), {"--inputs", typo.string()}),
              HasSubstr("unknown key \"dtpye\""));
}

TEST_F(InputFormsCliTest, JsonThatIsNotRectangularOrNotNumbersIsAnError) {
  fs::path ragged = write("ragged.json", R"({"x": [[1, 2, 3], [4, 5]], "w": 1})");
  EXPECT_THAT(
      user_error(small_model(), {"--inputs", ragged.string()}),
      HasSubstr("ragged.json entry 'x': item [1] is a list of 2 where a list of 3 belongs"));
  fs::path text = write("text.json", R"({"x": [["1", 2, 3]]})");
  EXPECT_THAT(user_error(small_model(), {"--inputs", text.string()}),
              HasSubstr("entry 'x': item [0][0] is string where a number belongs"));
  fs::path broken = write("broken.json", R"({"x": [1, 2)");
  EXPECT_THAT(user_error(small_model(), {"--inputs", broken.string()}),
              HasSubstr("broken.json is not valid JSON"));
}

TEST_F(InputFormsCliTest, InputValuesTakeTheirShapeFromInputShape) {
  // w from a .npy: y = (x + x) * x = 2x^2.
  expect_f32(run_to_file(small_model(), {"--input", "x=1,2,3,4,5,6", "--input-shape", "x=2x3",
                                         "--input", "w=@" + npy("x_f32.npy")}),
             "y", {2, 3}, {2, 8, 18, 32, 50, 72});
}

TEST_F(InputFormsCliTest, InputValuesWithoutAShapeAreOneAxisOrAScalar) {
  ProcessResult r =
      run(mixed_model(), {"--input", "ids=1, 2,3", "--input", "m=0,127,255", "--input", "t=-0.5"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_EQ(r.out,
            "outputs:\n"
            "  y i64[3]: [2, 4, 6]\n"
            "  z u8[3]: [0, 254, 254]\n"  // 255 + 255 wraps in u8
            "  s f32[]: 0.25\n")
      << dump(r);
  // Six values for f32[2,3] are not what the user meant; the hint says which option to add.
  std::string err = user_error(small_model(), {"--input", "x=1,2,3,4,5,6", "--input", "w=1"});
  EXPECT_THAT(err, HasSubstr("--input x gives 6 values as one axis, but the model's input 'x' is "
                             "f32[2,3]"));
  EXPECT_THAT(err, HasSubstr("hint: give its shape: --input-shape x=2x3"));
}

TEST_F(InputFormsCliTest, ValuesTheDtypeCannotHoldAreErrorsNeverRounded) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"ids=1,3.5,2", "m=1,2,3", "t=1"},
       "--input ids: value 2 ('3.5') is not an integer, and the input is i64"},
      {{"ids=1,2,3", "m=1,300,3", "t=1"},
       "--input m: value 2 ('300') is outside u8's range (0 to 255)"},
      {{"ids=1,2,3", "m=-1,2,3", "t=1"}, "--input m: value 1 ('-1') is outside u8's range"},
      {{"ids=1,2,9223372036854775808", "m=1,2,3", "t=1"},
       "value 3 ('9223372036854775808') is "
       "outside i64's range"},
      {{"ids=1,2,3", "m=1,2,3", "t=1e39"}, "--input t: value 1 ('1e39') is outside f32's range"},
      {{"ids=1,2,3", "m=1,2,3", "t=one"}, "--input t: value 1 ('one') is not a number"},
      {{"ids=1,,3", "m=1,2,3", "t=1"}, "--input ids: '1,,3' has an empty value at item 2"},
      {{"ids=1,2,3", "m=1,2,3", "t=1,2"},
       "--input t gives 2 values as one axis, but the model's "
       "input 't' is f32[]"},
  };
  for (const auto& [values, message] : cases) {
    std::vector<std::string> args;
    for (const std::string& v : values) args.insert(args.end(), {"--input", v});
    EXPECT_THAT(user_error(mixed_model(), args), HasSubstr(message));
  }
  // 9223372036854775807 is i64's largest: exact, not rounded through a double.
  ProcessResult r = run(mixed_model(), {"--input", "ids=9223372036854775807,-4611686018427387904,0",
                                        "--input", "m=1,2,3", "--input", "t=1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.out, HasSubstr("\"values\": [-2, -9223372036854775808, 0]")) << dump(r);
}

TEST_F(InputFormsCliTest, BadInputAndInputShapeSpecsAreErrors) {
  EXPECT_THAT(user_error(small_model(), {"--input", "x"}), HasSubstr("--input 'x' is not NAME="));
  EXPECT_THAT(user_error(small_model(), {"--input", "x=1", "--input", "x=2"}),
              HasSubstr("--input gives 'x' twice"));
  EXPECT_THAT(user_error(small_model(), {"--input-shape", "x=2x3"}),
              HasSubstr("--input-shape x=2x3: there is no --input x"));
  EXPECT_THAT(user_error(small_model(), {"--input", "x=1", "--input-shape", "x=2by3"}),
              HasSubstr("--input-shape x: '2by3' is not a shape"));
  EXPECT_THAT(user_error(small_model(), {"--input", "x=1,2,3,4,5", "--input-shape", "x=2x3"}),
              HasSubstr("--input x: 5 values are given for shape [2,3], which holds 6"));
  EXPECT_THAT(
      user_error(small_model(), {"--input", "x=@" + npy("x_f32.npy"), "--input-shape", "x=3x2"}),
      HasSubstr("which has its own shape"));
}

TEST_F(InputFormsCliTest, AnInputReplacesTheFilesTensorWithANote) {
  ProcessResult r = run(small_model(), {"--inputs", npy("small_stored.npz"), "--input",
                                        "w=0,0,0,0,0,-1", "--input-shape", "w=2x3"});
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  EXPECT_THAT(r.err, HasSubstr("rlx: note: --input w replaces the tensor 'w' of ")) << dump(r);
  // y = x * x, but for (6 - 1) * 6.
  EXPECT_EQ(r.out,
            "outputs:\n"
            "  y f32[2,3]:\n"
            "    [[ 1,  4,  9],\n"
            "     [16, 25, 30]]\n")
      << dump(r);
}

TEST_F(InputFormsCliTest, AnInputNameTheModelLacksIsAnErrorWithTheLikelyOne) {
  std::string err = user_error(mixed_model(), {"--input", "idz=1,2,3"});
  EXPECT_THAT(err, HasSubstr("--input idz: the model has no input 'idz'\n"
                             "  the model's inputs: ids i64[3], m u8[3], t f32[]"));
  EXPECT_THAT(err, HasSubstr("hint: did you mean --input ids=...?"));
  err = user_error(mixed_model(), {"--input", "pixel_values=1"});
  EXPECT_THAT(err, HasSubstr("no input 'pixel_values'"));
  EXPECT_THAT(err, ::testing::Not(HasSubstr("did you mean")));
  // In a file, a misspelt name leaves an input missing: the error says which name was meant.
  fs::path in = write("in.json", R"({"idz": [1, 2, 3], "m": [1, 2, 3], "t": 1})");
  err = user_error(mixed_model(), {"--inputs", in.string()});
  EXPECT_THAT(err, HasSubstr("input 'ids' (i64[3]) is not in"));
  EXPECT_THAT(err, HasSubstr("holds: idz [3], m [3], t []"));
  EXPECT_THAT(err, HasSubstr("is 'idz' meant to be 'ids'?"));
  // Nothing given at all: what the model takes.
  err = user_error(mixed_model(), {});
  EXPECT_THAT(err, HasSubstr("inputs 'ids' (i64[3]), 'm' (u8[3]), 't' (f32[]) are not given"));
}

TEST_F(InputFormsCliTest, RunWithoutOutputPrintsSmallOutputsWholeAndSummarisesLargeOnes) {
  fs::path model = write("big.rlx",
                         "graph @big(%x: f32[10,10], %w: f32[2,2,2]) {\n"
                         "  %y = Add(%x, %x) : f32[10,10]\n"
                         "  %v = Mul(%w, %w) : f32[2,2,2]\n"
                         "  return %y, %v\n"
                         "}\n");
  std::string hundred;
  for (int i = 0; i < 100; ++i) hundred += (i ? "," : "") + std::to_string(i);
  const std::vector<std::string> args = {"--input",       "x=" + hundred, "--input-shape",
                                         "x=10x10",       "--input",      "w=1,-2,3,0.5,5,6,7,-8",
                                         "--input-shape", "w=2x2x2"};
  ProcessResult r = run(model, args);
  ASSERT_EQ(r.exit_code, 0) << dump(r);
  // y = 2x: 0, 2, ..., 198; mean 99. v = w^2, a block per leading index.
  EXPECT_EQ(r.out,
            "outputs:\n"
            "  y f32[10,10]: 100 values, min 0, max 198, mean 99\n"
            "    first 8: [0, 2, 4, 6, 8, 10, 12, 14, ...]\n"
            "  v f32[2,2,2]:\n"
            "    [[[   1,    4],\n"
            "      [   9, 0.25]],\n"
            "\n"
            "     [[  25,   36],\n"
            "      [  49,   64]]]\n")
      << dump(r);

  std::vector<std::string> json_args = args;
  json_args.push_back("--json");
  ProcessResult j = run(model, json_args);
  ASSERT_EQ(j.exit_code, 0) << dump(j);
  json::Value doc = parse_json(j);
  const json::Value* y = find_named(*doc.find("outputs"), "y");
  ASSERT_TRUE(y && y->find("summary")) << dump(j);
  EXPECT_FALSE(y->find("values")) << dump(j);
  const json::Value& summary = *y->find("summary");
  EXPECT_EQ(summary.find("min")->as_number()->raw, "0");
  EXPECT_EQ(summary.find("max")->as_number()->raw, "198");
  EXPECT_EQ(summary.find("mean")->as_number()->raw, "99");
  ASSERT_EQ(summary.find("first")->as_array()->size(), 8u);
  EXPECT_EQ(summary.find("first")->as_array()->at(7).as_number()->raw, "14");
  const json::Value* v = find_named(*doc.find("outputs"), "v");
  ASSERT_TRUE(v && v->find("values")) << dump(j);
  const json::Array& blocks = *v->find("values")->as_array();
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(blocks[0].as_array()->at(1).as_array()->at(1).as_number()->raw, "0.25");
  EXPECT_EQ(blocks[1].as_array()->at(1).as_array()->at(0).as_number()->raw, "49");
}

TEST_F(InputFormsCliTest, BenchSaveInputsRunsAgainThroughRunToTheSameOutputs) {
  const std::string model = (fs::path(RLX_MODELS_DIR) / "tiny-gpt" / "model.rlx").string();
  const fs::path saved = dir_ / "made-up.safetensors", bench_out = dir_ / "bench.safetensors";
  ProcessResult b = rlx({"bench", model, "--target", "cpu", "--seq", "5", "--warmup", "1", "--runs",
                         "1", "--save-inputs", saved.string(), "--output", bench_out.string()});
  ASSERT_EQ(b.exit_code, 0) << dump(b);
  EXPECT_THAT(b.out, HasSubstr("wrote the inputs to " + saved.string())) << dump(b);
  TensorMap inputs = read_safetensors(saved);
  ASSERT_EQ(inputs.size(), 2u);
  // Made-up positions count 0, 1, ... along the sequence.
  const Tensor& positions = inputs.at("positions");
  ASSERT_EQ(positions.shape(), (std::vector<int64_t>{5}));
  for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(positions.as<int64_t>()[i], i);
  ASSERT_EQ(inputs.at("ids").dtype(), DType::kI64);

  TensorMap run_out = run_to_file(model, {"--inputs", saved.string()});
  TensorMap bench_outputs = read_safetensors(bench_out);
  ASSERT_TRUE(run_out.count("logits") && bench_outputs.count("logits"));
  const Tensor &a = run_out.at("logits"), &c = bench_outputs.at("logits");
  ASSERT_EQ(a.shape(), (std::vector<int64_t>{5, 64}));
  ASSERT_EQ(a.shape(), c.shape());
  for (int64_t i = 0; i < a.numel(); ++i)
    ASSERT_EQ(a.as<float>()[i], c.as<float>()[i]) << "element " << i;

  // Given inputs are saved as given; the name says what is written.
  ProcessResult g =
      rlx({"bench", small_model().string(), "--target", "cpu", "--warmup", "1", "--runs", "1",
           "--inputs", npy("small_compressed.npz"), "--save-inputs", saved.string(), "--json"});
  ASSERT_EQ(g.exit_code, 0) << dump(g);
  EXPECT_EQ(str(parse_json(g).find("saved_inputs")), saved.string()) << dump(g);
  EXPECT_FLOAT_EQ(read_safetensors(saved).at("w").as<float>()[0], 0.5f);
  ProcessResult wrong = rlx({"bench", model, "--target", "cpu", "--seq", "5", "--save-inputs",
                             (dir_ / "in.npz").string()});
  EXPECT_EQ(wrong.exit_code, 1) << dump(wrong);
  EXPECT_THAT(wrong.err, HasSubstr("the inputs are written as safetensors")) << dump(wrong);
}

TEST_F(InputFormsCliTest, BenchTakesInputValuesButNotWithSizes) {
  ProcessResult b = rlx({"bench", small_model().string(), "--target", "cpu", "--warmup", "1",
                         "--runs", "1", "--input", "x=1,2,3,4,5,6", "--input-shape", "x=2x3",
                         "--input", "w=@" + npy("x_f32.npy"), "--json"});
  ASSERT_EQ(b.exit_code, 0) << dump(b);
  EXPECT_EQ(str(parse_json(b).find("inputs")->find("x")), "f32[2,3]") << dump(b);
  ProcessResult both =
      rlx({"bench", small_model().string(), "--target", "cpu", "--input", "x=1", "--seq", "4"});
  EXPECT_EQ(both.exit_code, 1) << dump(both);
  EXPECT_THAT(both.err, HasSubstr("give either inputs (--inputs, --input) or sizes")) << dump(both);
}

}  // namespace
}  // namespace rlx::cli
