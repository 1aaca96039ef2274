// What the directx target learns about a Direct3D 12 device (CheckFeatureSupport), kept free of
// Windows headers so the refusals it implies (d3d12_legality.h) build and are tested everywhere.
#pragma once
#include <string>

namespace rlx::directx {

struct D3D12Info {
  std::string name;           // the adapter's description: "NVIDIA GeForce RTX 4090"
  std::string feature_level;  // "12_1"
  std::string shader_model;   // the highest the device and runtime report: "6.7"
  bool fp64 = false;          // D3D12_OPTIONS.DoublePrecisionFloatShaderOps
  bool int64 = false;         // D3D12_OPTIONS1.Int64ShaderOps
  bool native16 = false;      // D3D12_OPTIONS4.Native16BitShaderOpsSupported
  std::string describe() const { return name + " (Direct3D 12, feature level " + feature_level + ", shader model " + shader_model + ")"; }
};

}  // namespace rlx::directx
