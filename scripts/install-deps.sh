#!/usr/bin/env bash
# Installs the Debian 12 packages rlx builds and tests with. Runs apt only when something is
# missing, so a warm machine (and CI on it) pays nothing.
set -euo pipefail
packages=(cmake ninja-build g++ ccache pkg-config python3-venv
          libboost-dev libtomlplusplus-dev libfmt-dev libtbb-dev libsimdjson-dev libutf8proc-dev
          libcli11-dev  # the rlx command line (header-only)
          libxxhash-dev  # the plugin probe cache's file hash (header-only use)
          zlib1g-dev  # inflates np.savez_compressed members of .npz inputs (decision 32)
          libpng-dev  # the PNG images of Gaussian-splatting fits (rlx splat-fit; core/src/io/png.cpp)
          liblapacke-dev libopenblas-dev  # the cpu target's dense factorizations (LAPACKE)
          libsuitesparse-dev  # the cpu target's sparse LU (KLU) behind SparseSolve
          googletest libgtest-dev libgmock-dev dpkg-dev
          libonnx-dev libprotobuf-dev protobuf-compiler clang-14 libclang-rt-14-dev
          libonnx-testdata  # ONNX's backend node tests (tests/frontends/onnx/test_node_suite.cpp)
          ocl-icd-opencl-dev opencl-c-headers pocl-opencl-icd clinfo
          llvm-spirv-14 spirv-tools libze-dev intel-opencl-icd
          spirv-cross  # the metal tests check MSL interfaces against SPIR-V -> MSL of the vulkan kernels
          flatbuffers-compiler libflatbuffers-dev
          libvulkan-dev glslang-dev glslang-tools mesa-vulkan-drivers
          libegl-dev libgl-dev libegl-mesa0 libgl1-mesa-dri
          g++-mingw-w64-x86-64-posix mingw-w64-x86-64-dev  # compiles the directx target's D3D12 host
          chromium  # headless Chromium runs the webgpu target's ES module (WebGPU on SwiftShader)
          # the rocm target's compilers (ROCm 5.2: hiprtc in libamdhip64, hipcc with LLVM 15, whose
          # llvm-objdump and llvm-mc check the gfx90a code objects)
          libamdhip64-dev hipcc rocm-device-libs
          # the cortexm target's proof: builds its firmware (newlib for semihosting) and runs it
          # on emulated Cortex-M4/M7/M55 boards
          gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm
          # collectives: Gloo (the cpu target's engine, TCP), OpenMPI (mpirun ranks, bench peer)
          libgloo-dev libopenmpi-dev openmpi-bin
          # the hexagon target: clang-14 (above) compiles for Hexagon, lld-14 links its freestanding
          # programs (ld.lld) and qemu-user's qemu-hexagon runs them in its tests
          lld-14 qemu-user
          # the fpga target's proof: Verilator simulates its SystemVerilog against the host int8
          # reference, yosys synthesizes it (synth_ice40, synth_xilinx) for the resource report
          verilator yosys)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
