# Sourced on the GPU machine from the repository root (`. bench/gpu/on_device.sh`): unpacks what
# bench/gpu/bundle.sh packed (rlx into /tmp/rlx, the fuzz kit into /tmp/fuzz, MiniLM into /tmp/minilm), installs the
# Vulkan/EGL loaders carried in .gl/ (Debian's .debs, see docs/targets.md), registers NVIDIA's
# OpenCL driver with the ICD loader and sets what rlx needs to find them. Prints what rlx sees.
set -u
bundle=${RLX_BUNDLE:-.device}
tar xJf "$bundle/rlx.tar.xz" -C /tmp
[ -f "$bundle/fuzz.tar.gz" ] && tar xzf "$bundle/fuzz.tar.gz" -C /tmp
[ -f "$bundle/minilm.tar.gz" ] && tar xzf "$bundle/minilm.tar.gz" -C /tmp
for f in .gl/*.deb; do [ -f "$f" ] && dpkg -x "$f" /; done
ldconfig
nv=/usr/local/nvidia
[ -d "$nv/share/vulkan/icd.d" ] && export VK_DRIVER_FILES=$nv/share/vulkan/icd.d/nvidia_icd.json
[ -d "$nv/share/glvnd/egl_vendor.d" ] && export __EGL_VENDOR_LIBRARY_FILENAMES=$nv/share/glvnd/egl_vendor.d/10_nvidia.json
# The ICD loader reads /etc/OpenCL/vendors; NVIDIA's library sits in the driver's mount.
mkdir -p /etc/OpenCL/vendors
[ -f /etc/OpenCL/vendors/nvidia.icd ] || echo libnvidia-opencl.so.1 >/etc/OpenCL/vendors/nvidia.icd
export LD_LIBRARY_PATH=/tmp/rlx/lib:/tmp/fuzz/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
for d in $nv/lib64 $nv/lib; do [ -d "$d" ] && LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$d; done
export RLX_WGPU_NATIVE=/tmp/rlx/lib/libwgpu_native-release.so
export PATH=/tmp/rlx/bin:$PATH
rlx --list-targets
