#include "rlx/core/matrix_market.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "rlx/core/error.h"

namespace rlx {

namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

class Reader {
 public:
  explicit Reader(const std::filesystem::path& p) : path_(p), in_(p) {
    if (!in_) throw_user_error(fmt::format("{}: cannot open the Matrix Market file", p.string()));
  }

  [[noreturn]] void fail(const std::string& why) const {
    throw_user_error(fmt::format("{}:{}: {}", path_.string(), line_no_, why));
  }

  bool next(std::string& line, bool allow_comment = false) {
    while (std::getline(in_, line)) {
      ++line_no_;
      if (allow_comment) return true;
      if (line.empty() || line[0] == '%') continue;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      return true;
    }
    return false;
  }

 private:
  std::filesystem::path path_;
  std::ifstream in_;
  int64_t line_no_ = 0;
};

}  // namespace

CsrMatrix csr_from_triplets(int64_t rows, int64_t cols, std::vector<int64_t> r,
                            std::vector<int64_t> c, std::vector<double> v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return r[a] != r[b] ? r[a] < r[b] : c[a] < c[b]; });
  CsrMatrix m;
  m.rows = rows, m.cols = cols;
  m.indptr.assign(static_cast<size_t>(rows + 1), 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const size_t i = order[k];
    if (k && r[i] == r[order[k - 1]] && c[i] == c[order[k - 1]]) {
      m.values.back() += v[i];  // a repeated entry adds to the previous one
      continue;
    }
    m.indices.push_back(c[i]);
    m.values.push_back(v[i]);
    ++m.indptr[r[i] + 1];
  }
  for (int64_t i = 0; i < rows; ++i) m.indptr[i + 1] += m.indptr[i];
  return m;
}

CsrMatrix read_matrix_market(const std::filesystem::path& path) {
  Reader rd(path);
  std::string line;
  if (!rd.next(line, true) || lower(line).rfind("%%matrixmarket", 0) != 0)
    rd.fail("not a Matrix Market file: the first line must start with %%MatrixMarket");
  std::istringstream h(lower(line));
  std::string banner, object, format, field, symmetry;
  h >> banner >> object >> format >> field >> symmetry;
  if (object != "matrix")
    rd.fail(fmt::format("object '{}' is not supported (only matrix)", object));
  if (format != "coordinate" && format != "array")
    rd.fail(fmt::format("format '{}' is not coordinate or array", format));
  if (field != "real" && field != "integer" && field != "double" && field != "pattern")
    rd.fail(
        fmt::format("field '{}' is not supported (real, integer, pattern; not complex)", field));
  if (symmetry != "general" && symmetry != "symmetric" && symmetry != "skew-symmetric")
    rd.fail(fmt::format("symmetry '{}' is not general, symmetric or skew-symmetric", symmetry));
  if (format == "array" && field == "pattern")
    rd.fail("an array file cannot have the pattern field");
  const bool coord = format == "coordinate", pattern = field == "pattern";
  const int sym = symmetry == "general" ? 0 : symmetry == "symmetric" ? 1 : -1;

  if (!rd.next(line)) rd.fail("the size line is missing");
  std::istringstream sz(line);
  int64_t rows = -1, cols = -1, entries = -1;
  sz >> rows >> cols;
  if (coord) sz >> entries;
  if (!sz || rows < 0 || cols < 0 || (coord && entries < 0))
    rd.fail(fmt::format("bad size line '{}' (want: rows cols{})", line, coord ? " entries" : ""));
  if (sym && rows != cols) rd.fail("a symmetric matrix must be square");
  if (!coord) entries = sym ? rows * (rows + 1) / 2 : rows * cols;

  std::vector<int64_t> r, c;
  std::vector<double> v;
  r.reserve(static_cast<size_t>(entries)), c.reserve(static_cast<size_t>(entries));
  v.reserve(static_cast<size_t>(entries));
  int64_t ai = 0, aj = 0;  // the next array entry (column-major, lower triangle when symmetric)
  for (int64_t e = 0; e < entries; ++e) {
    if (!rd.next(line))
      rd.fail(fmt::format("the file ends after {} of its {} entries", e, entries));
    std::istringstream es(line);
    int64_t i = 0, j = 0;
    double x = 1;
    if (coord) {
      es >> i >> j;
      if (!es || i < 1 || i > rows || j < 1 || j > cols)
        rd.fail(fmt::format("entry '{}' needs 1-based indices within {} x {}", line, rows, cols));
      --i, --j;
      if (!pattern) es >> x;
    } else {
      i = ai, j = aj;
      es >> x;
      if (++ai == rows) ++aj, ai = sym ? aj : 0;
    }
    if (!es || !std::isfinite(x)) rd.fail(fmt::format("entry '{}' has no finite value", line));
    if (sym && j > i) rd.fail("a symmetric file stores only its lower triangle (row >= column)");
    if (sym == -1 && i == j) rd.fail("a skew-symmetric matrix has no diagonal entries");
    r.push_back(i), c.push_back(j), v.push_back(x);
    if (sym && i != j) r.push_back(j), c.push_back(i), v.push_back(sym * x);
  }
  return csr_from_triplets(rows, cols, std::move(r), std::move(c), std::move(v));
}

std::vector<Tensor> CsrMatrix::tensors(DType values_dtype) const {
  std::vector<Tensor> t{Tensor::from<int64_t>(DType::kI64, {rows + 1}, indptr),
                        Tensor::from<int64_t>(DType::kI64, {nnz()}, indices)};
  if (values_dtype == DType::kF64) {
    t.push_back(Tensor::from<double>(DType::kF64, {nnz()}, values));
  } else if (values_dtype == DType::kF32) {
    t.push_back(Tensor::from<float>(DType::kF32, {nnz()},
                                    std::vector<float>(values.begin(), values.end())));
  } else {
    throw_user_error(
        fmt::format("CSR values must be f32 or f64, not {}", dtype_name(values_dtype)));
  }
  return t;
}

std::vector<double> CsrMatrix::dense() const {
  std::vector<double> d(static_cast<size_t>(rows * cols), 0.0);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t k = indptr[i]; k < indptr[i + 1]; ++k) d[i * cols + indices[k]] = values[k];
  return d;
}

void write_matrix_market(const std::filesystem::path& path, const CsrMatrix& a) {
  std::ofstream out(path);
  if (!out) throw_user_error(fmt::format("{}: cannot write the Matrix Market file", path.string()));
  out << "%%MatrixMarket matrix coordinate real general\n"
      << fmt::format("{} {} {}\n", a.rows, a.cols, a.nnz());
  for (int64_t i = 0; i < a.rows; ++i)
    for (int64_t k = a.indptr[i]; k < a.indptr[i + 1]; ++k)
      out << fmt::format("{} {} {:.17g}\n", i + 1, a.indices[k] + 1, a.values[k]);
  if (!out)
    throw_user_error(fmt::format("{}: writing the Matrix Market file failed", path.string()));
}

}  // namespace rlx
