// Matrix Market (.mtx) files, the format of the SuiteSparse and NIST collections: sparse
// "coordinate" matrices (real, integer or pattern; general, symmetric or skew-symmetric) read
// into the CSR form the sparse ops take (core/src/ops/ops_sparse.cpp), and dense "array"
// matrices (right-hand sides). Every error names the file and line.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

#include "rlx/core/tensor.h"

namespace rlx {

// Rows sorted by column, duplicates summed (the format's convention), symmetric halves
// mirrored. A dense file reads as every entry stored, column-major order undone.
struct CsrMatrix {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> indptr, indices;
  std::vector<double> values;
  int64_t nnz() const { return static_cast<int64_t>(values.size()); }
  // indptr and indices as i64, values as f32 or f64, named "indptr", "indices", "values".
  std::vector<Tensor> tensors(DType values_dtype) const;
  // The whole matrix row-major (for right-hand sides and tests).
  std::vector<double> dense() const;
};

CsrMatrix read_matrix_market(const std::filesystem::path& path);
// Builds a CSR matrix from (row, col, value) triplets, summing duplicates.
CsrMatrix csr_from_triplets(int64_t rows, int64_t cols, std::vector<int64_t> r,
                            std::vector<int64_t> c, std::vector<double> v);
// Writes `a` as a "coordinate real general" file (for tests, examples and benchmarks).
void write_matrix_market(const std::filesystem::path& path, const CsrMatrix& a);

}  // namespace rlx
