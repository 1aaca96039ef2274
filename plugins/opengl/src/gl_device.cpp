#include "gl_device.h"

#include <EGL/egl.h>
#include <EGL/eglext.h>
#include <GL/glcorearb.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <vector>

#include "glsl_library.h"
#include "rlx/core/error.h"
#include "rlx/sdk/render.h"

namespace rlx::opengl {

namespace {

// GL entry points by name; each resolved with eglGetProcAddress.
#define RLX_GL_FUNCTIONS(X)                                                                    \
  X(PFNGLGETSTRINGPROC, glGetString) X(PFNGLGETSTRINGIPROC, glGetStringi)                      \
  X(PFNGLGETINTEGERVPROC, glGetIntegerv) X(PFNGLGETINTEGERI_VPROC, glGetIntegeri_v)            \
  X(PFNGLGENBUFFERSPROC, glGenBuffers) X(PFNGLDELETEBUFFERSPROC, glDeleteBuffers)              \
  X(PFNGLBINDBUFFERPROC, glBindBuffer) X(PFNGLBUFFERDATAPROC, glBufferData)                    \
  X(PFNGLBUFFERSUBDATAPROC, glBufferSubData) X(PFNGLGETBUFFERSUBDATAPROC, glGetBufferSubData)  \
  X(PFNGLCOPYBUFFERSUBDATAPROC, glCopyBufferSubData) X(PFNGLCREATESHADERPROC, glCreateShader)  \
  X(PFNGLSHADERSOURCEPROC, glShaderSource) X(PFNGLCOMPILESHADERPROC, glCompileShader)          \
  X(PFNGLGETSHADERIVPROC, glGetShaderiv) X(PFNGLGETSHADERINFOLOGPROC, glGetShaderInfoLog)      \
  X(PFNGLDELETESHADERPROC, glDeleteShader) X(PFNGLCREATEPROGRAMPROC, glCreateProgram)          \
  X(PFNGLATTACHSHADERPROC, glAttachShader) X(PFNGLLINKPROGRAMPROC, glLinkProgram)              \
  X(PFNGLGETPROGRAMIVPROC, glGetProgramiv) X(PFNGLGETPROGRAMINFOLOGPROC, glGetProgramInfoLog)  \
  X(PFNGLDELETEPROGRAMPROC, glDeleteProgram) X(PFNGLUSEPROGRAMPROC, glUseProgram)              \
  X(PFNGLBINDBUFFERBASEPROC, glBindBufferBase) X(PFNGLDISPATCHCOMPUTEPROC, glDispatchCompute)  \
  X(PFNGLMEMORYBARRIERPROC, glMemoryBarrier) X(PFNGLFINISHPROC, glFinish)                      \
  X(PFNGLGETERRORPROC, glGetError)

struct Gl {
#define RLX_GL_MEMBER(type, name) type name = nullptr;
  RLX_GL_FUNCTIONS(RLX_GL_MEMBER)
#undef RLX_GL_MEMBER
};

GLuint id_of(const gpu_host::DeviceBuffer& b) {
  return static_cast<GLuint>(reinterpret_cast<uintptr_t>(b.handle));
}

}  // namespace

std::string GlInfo::describe() const { return fmt::format("{} (OpenGL {})", renderer, version); }

class GlContext {
 public:
  explicit GlContext(std::string* why) { ok_ = init(why); }
  bool ok() const { return ok_; }
  const Gl& gl() const { return gl_; }
  const GlInfo& info() const { return info_; }
  std::mutex& mutex() { return mutex_; }

  // GL contexts belong to a thread: the calling thread takes it (callers hold mutex()).
  void make_current() {
    if (getcurrent_() != context_ && !make_current_(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_))
      throw Error(ErrorKind::kUser, fmt::format("opengl: eglMakeCurrent failed (EGL error 0x{:x})", get_error_()));
  }
  void check(const char* what) const {
    GLenum e = gl_.glGetError();
    if (e != GL_NO_ERROR)
      throw Error(ErrorKind::kUser, fmt::format("opengl: {} failed on {} (GL error 0x{:x})", what, info_.describe(), e));
  }

 private:
  bool ok_ = false;
  Gl gl_;
  GlInfo info_;
  std::mutex mutex_;
  EGLDisplay display_ = EGL_NO_DISPLAY;
  EGLContext context_ = EGL_NO_CONTEXT;
  PFNEGLMAKECURRENTPROC make_current_ = nullptr;
  PFNEGLGETCURRENTCONTEXTPROC getcurrent_ = nullptr;
  PFNEGLGETERRORPROC get_error_ = nullptr;

  bool init(std::string* why) {
    void* lib = dlopen("libEGL.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      *why = fmt::format("libEGL.so.1 is not installed ({}); install libegl1 and libegl-mesa0 (Mesa's "
                         "llvmpipe runs OpenGL on the CPU)",
                         dlerror());
      return false;
    }
    auto sym = [&](const char* name) { return dlsym(lib, name); };
    auto get_proc = reinterpret_cast<PFNEGLGETPROCADDRESSPROC>(sym("eglGetProcAddress"));
    auto initialize = reinterpret_cast<PFNEGLINITIALIZEPROC>(sym("eglInitialize"));
    auto bind_api = reinterpret_cast<PFNEGLBINDAPIPROC>(sym("eglBindAPI"));
    auto create_context = reinterpret_cast<PFNEGLCREATECONTEXTPROC>(sym("eglCreateContext"));
    auto query_string = reinterpret_cast<PFNEGLQUERYSTRINGPROC>(sym("eglQueryString"));
    make_current_ = reinterpret_cast<PFNEGLMAKECURRENTPROC>(sym("eglMakeCurrent"));
    getcurrent_ = reinterpret_cast<PFNEGLGETCURRENTCONTEXTPROC>(sym("eglGetCurrentContext"));
    get_error_ = reinterpret_cast<PFNEGLGETERRORPROC>(sym("eglGetError"));
    if (!get_proc || !initialize || !bind_api || !create_context || !query_string || !make_current_ ||
        !getcurrent_ || !get_error_) {
      *why = "libEGL.so.1 lacks an EGL 1.4 entry point";
      return false;
    }
    const char* client = query_string(EGL_NO_DISPLAY, EGL_EXTENSIONS);
    auto platform_display =
        reinterpret_cast<PFNEGLGETPLATFORMDISPLAYEXTPROC>(get_proc("eglGetPlatformDisplayEXT"));
    if (!client || std::string(client).find("EGL_MESA_platform_surfaceless") == std::string::npos ||
        !platform_display) {
      *why = "EGL has no surfaceless platform (EGL_MESA_platform_surfaceless): opengl needs Mesa's EGL "
             "(libegl-mesa0) to make a context without a window";
      return false;
    }
    display_ = platform_display(EGL_PLATFORM_SURFACELESS_MESA, EGL_DEFAULT_DISPLAY, nullptr);
    EGLint major = 0, minor = 0;
    if (display_ == EGL_NO_DISPLAY || !initialize(display_, &major, &minor)) {
      *why = fmt::format("eglInitialize failed on the surfaceless platform (EGL error 0x{:x})", get_error_());
      return false;
    }
    if (!bind_api(EGL_OPENGL_API)) {
      *why = "EGL cannot bind the desktop OpenGL API";
      return false;
    }
    const EGLint attribs[] = {EGL_CONTEXT_MAJOR_VERSION, 4, EGL_CONTEXT_MINOR_VERSION, 3,
                              EGL_CONTEXT_OPENGL_PROFILE_MASK, EGL_CONTEXT_OPENGL_CORE_PROFILE_BIT, EGL_NONE};
    context_ = create_context(display_, EGL_NO_CONFIG_KHR, EGL_NO_CONTEXT, attribs);
    if (context_ == EGL_NO_CONTEXT) {
      *why = fmt::format("no OpenGL 4.3 core context could be made (EGL error 0x{:x}); compute shaders "
                         "need OpenGL 4.3",
                         get_error_());
      return false;
    }
    if (!make_current_(display_, EGL_NO_SURFACE, EGL_NO_SURFACE, context_)) {
      *why = fmt::format("eglMakeCurrent failed (EGL error 0x{:x})", get_error_());
      return false;
    }
    std::string missing;
#define RLX_GL_RESOLVE(type, name)                                              \
  gl_.name = reinterpret_cast<type>(get_proc(#name));                           \
  if (!gl_.name && missing.empty()) missing = #name;
    RLX_GL_FUNCTIONS(RLX_GL_RESOLVE)
#undef RLX_GL_RESOLVE
    if (!missing.empty()) {
      *why = fmt::format("the OpenGL library lacks {}", missing);
      return false;
    }
    info_.renderer = reinterpret_cast<const char*>(gl_.glGetString(GL_RENDERER));
    info_.version = reinterpret_cast<const char*>(gl_.glGetString(GL_VERSION));
    GLint n = 0;
    gl_.glGetIntegerv(GL_NUM_EXTENSIONS, &n);
    for (GLint i = 0; i < n; ++i)
      if (std::string(reinterpret_cast<const char*>(gl_.glGetStringi(GL_EXTENSIONS, i))) == "GL_ARB_gpu_shader_int64")
        info_.int64 = true;
    gl_.glGetIntegerv(GL_MAX_COMPUTE_SHADER_STORAGE_BLOCKS, &info_.max_storage_blocks);
    for (int i = 0; i < 3; ++i) gl_.glGetIntegeri_v(GL_MAX_COMPUTE_WORK_GROUP_COUNT, i, &info_.max_groups[i]);
    return true;
  }
};

namespace {

class GlModule final : public gpu_host::Module {
 public:
  GlModule(GlContext& c) : c_(c) {}
  ~GlModule() override {
    std::lock_guard lock(c_.mutex());
    try {
      c_.make_current();
      for (auto& [name, p] : programs) c_.gl().glDeleteProgram(p);
    } catch (...) {
    }
  }
  std::map<std::string, GLuint, std::less<>> programs;

 private:
  GlContext& c_;
};

}  // namespace

std::shared_ptr<GlDevice> GlDevice::shared(std::string* why) {
  struct Found {
    std::shared_ptr<GlDevice> device;
    // A context that failed to come up, kept like a working one so that it stays reachable:
    // dropped, LeakSanitizer reported it at every exit of a process without a GL driver.
    GlContext* unusable = nullptr;
    std::string error;
  };
  // Never destroyed: a GL driver must not be torn down by static destructors at exit.
  static const Found* found = [] {
    auto* f = new Found;
    auto* c = new GlContext(&f->error);
    if (c->ok())
      f->device = std::make_shared<GlDevice>(*c);
    else
      f->unusable = c;
    return f;
  }();
  if (!found->device && why) *why = found->error;
  return found->device;
}

const GlInfo& GlDevice::info() const { return c_.info(); }

const gpu_host::KernelLibrary& GlDevice::library() const { return glsl::glsl_opengl_library(); }

gpu_host::DeviceBuffer GlDevice::allocate(size_t bytes) {
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  const Gl& gl = c_.gl();
  GLuint b = 0;
  gl.glGenBuffers(1, &b);
  gl.glBindBuffer(GL_SHADER_STORAGE_BUFFER, b);
  gl.glBufferData(GL_SHADER_STORAGE_BUFFER, static_cast<GLsizeiptr>((bytes + 15) / 16 * 16), nullptr, GL_DYNAMIC_COPY);
  GLenum e = gl.glGetError();
  if (e != GL_NO_ERROR) {
    gl.glDeleteBuffers(1, &b);
    throw Error(ErrorKind::kUser, fmt::format("opengl: cannot allocate {} bytes on {} (GL error 0x{:x})", bytes,
                                              c_.info().describe(), e));
  }
  return {reinterpret_cast<void*>(static_cast<uintptr_t>(b)), bytes};
}

void GlDevice::release(gpu_host::DeviceBuffer& b) noexcept {
  if (!b.handle) return;
  std::lock_guard lock(c_.mutex());
  try {
    c_.make_current();
    GLuint id = id_of(b);
    c_.gl().glDeleteBuffers(1, &id);
  } catch (...) {
  }
  b.handle = nullptr;
}

void GlDevice::upload(const gpu_host::DeviceBuffer& dst, const void* src, size_t bytes) {
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  c_.gl().glBindBuffer(GL_SHADER_STORAGE_BUFFER, id_of(dst));
  c_.gl().glBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, static_cast<GLsizeiptr>(bytes), src);
  c_.check("glBufferSubData");
}

void GlDevice::download(const gpu_host::DeviceBuffer& src, void* dst, size_t bytes) {
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  c_.gl().glBindBuffer(GL_SHADER_STORAGE_BUFFER, id_of(src));
  c_.gl().glGetBufferSubData(GL_SHADER_STORAGE_BUFFER, 0, static_cast<GLsizeiptr>(bytes), dst);
  c_.check("glGetBufferSubData");
}

void GlDevice::copy(const gpu_host::DeviceBuffer& src, const gpu_host::DeviceBuffer& dst, size_t bytes) {
  if (bytes == 0) return;
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  const Gl& gl = c_.gl();
  gl.glBindBuffer(GL_COPY_READ_BUFFER, id_of(src));
  gl.glBindBuffer(GL_COPY_WRITE_BUFFER, id_of(dst));
  gl.glCopyBufferSubData(GL_COPY_READ_BUFFER, GL_COPY_WRITE_BUFFER, 0, 0, static_cast<GLsizeiptr>(bytes));
  c_.check("glCopyBufferSubData");
}

std::unique_ptr<gpu_host::Module> GlDevice::build(const std::string& source) {
  auto module = std::make_unique<GlModule>(c_);
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  const Gl& gl = c_.gl();
  // The module's sections (render.h's kShaderKernelMarker), each compiled with the prelude.
  const std::string marker = sdk::kShaderKernelMarker;
  size_t first = source.find(marker);
  const std::string prelude = source.substr(0, first);
  for (size_t at = first; at != std::string::npos;) {
    size_t name_end = source.find('\n', at);
    std::string symbol = source.substr(at + marker.size(), name_end - at - marker.size());
    size_t next = source.find(marker, name_end);
    std::string text = prelude + source.substr(name_end + 1, next == std::string::npos ? std::string::npos
                                                                                      : next - name_end - 1);
    at = next;
    GLuint shader = gl.glCreateShader(GL_COMPUTE_SHADER);
    const char* p = text.c_str();
    gl.glShaderSource(shader, 1, &p, nullptr);
    gl.glCompileShader(shader);
    GLint ok = 0;
    gl.glGetShaderiv(shader, GL_COMPILE_STATUS, &ok);
    std::string log(4096, '\0');
    GLsizei n = 0;
    if (!ok) {
      gl.glGetShaderInfoLog(shader, static_cast<GLsizei>(log.size()), &n, log.data());
      gl.glDeleteShader(shader);
      throw Error(ErrorKind::kCompile, fmt::format("opengl: {} could not compile kernel {}:\n{}\n{}", c_.info().describe(),
                                                   symbol, log.substr(0, static_cast<size_t>(n)), text));
    }
    GLuint program = gl.glCreateProgram();
    gl.glAttachShader(program, shader);
    gl.glLinkProgram(program);
    gl.glDeleteShader(shader);
    gl.glGetProgramiv(program, GL_LINK_STATUS, &ok);
    if (!ok) {
      gl.glGetProgramInfoLog(program, static_cast<GLsizei>(log.size()), &n, log.data());
      gl.glDeleteProgram(program);
      throw Error(ErrorKind::kCompile, fmt::format("opengl: {} could not link kernel {}:\n{}", c_.info().describe(),
                                                   symbol, log.substr(0, static_cast<size_t>(n))));
    }
    module->programs.emplace(symbol, program);
  }
  return module;
}

void GlDevice::launch(gpu_host::Module& m, const std::string& symbol,
                      const std::vector<const gpu_host::DeviceBuffer*>& args, int64_t work_items) {
  auto& module = static_cast<GlModule&>(m);
  auto it = module.programs.find(symbol);
  if (it == module.programs.end()) throw_internal_error(fmt::format("opengl: the module has no kernel {}", symbol));
  const GlInfo& info = c_.info();
  if (static_cast<int>(args.size()) > info.max_storage_blocks)
    throw Error(ErrorKind::kUser, fmt::format("opengl: kernel {} binds {} storage buffers, more than the {} {} allows",
                                              symbol, args.size(), info.max_storage_blocks, info.renderer));
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  const Gl& gl = c_.gl();
  gl.glUseProgram(it->second);
  for (size_t i = 0; i < args.size(); ++i) gl.glBindBufferBase(GL_SHADER_STORAGE_BUFFER, static_cast<GLuint>(i), id_of(*args[i]));
  // 64 invocations per group; rows of at most 65535 groups (the dialects' 2D grid).
  uint64_t groups = (static_cast<uint64_t>(work_items) + 63) / 64;
  uint64_t gx = std::min<uint64_t>({groups, static_cast<uint64_t>(info.max_groups[0]), 65535});
  uint64_t gy = (groups + gx - 1) / gx;
  if (gy > static_cast<uint64_t>(info.max_groups[1]))
    throw Error(ErrorKind::kUser, fmt::format("opengl: kernel {} needs {} work-items, more than {} can dispatch", symbol,
                                              work_items, info.renderer));
  gl.glDispatchCompute(static_cast<GLuint>(gx), static_cast<GLuint>(gy), 1);
  gl.glMemoryBarrier(GL_SHADER_STORAGE_BARRIER_BIT | GL_BUFFER_UPDATE_BARRIER_BIT);
  c_.check("glDispatchCompute");
}

void GlDevice::finish() {
  std::lock_guard lock(c_.mutex());
  c_.make_current();
  c_.gl().glFinish();
}

}  // namespace rlx::opengl
