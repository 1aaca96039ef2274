// The images `rlx train` learns from: MNIST's IDX files (gzip or plain) or a synthetic set.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

#include "rlx/core/tensor.h"

namespace rlx::cli {

struct ImageSet {
  Tensor images;  // u8 [n, rows, cols]
  Tensor labels;  // i32 [n]
  int64_t classes = 10;
};

struct ImageData {
  ImageSet train;
  std::optional<ImageSet> test;  // MNIST's t10k files when present; a held-out synthetic set
  std::string source;            // for messages: the folder, or "synthetic:N"
};

// `spec` is a folder holding train-images-idx3-ubyte and train-labels-idx1-ubyte (".gz" or not;
// "train-images.idx3-ubyte" spellings too), with t10k-* beside them for a test set, or
// "synthetic:N": N 28x28 images of 10 classes from a fixed seed (each class a random pattern,
// each image its class's pattern with noise, so the classes are learnable), and a test set of
// N/6 more. A user error names the file and what is wrong.
ImageData read_image_data(const std::string& spec);

// The images as the model's input: f32 [n, rows * cols] scaled to [-1, 1].
Tensor scaled_inputs(const Tensor& images);

}  // namespace rlx::cli
