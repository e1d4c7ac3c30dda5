// reduce-tune: NVRTC through dlopen, and the compile cache.
#include "kernels/nvrtc.h"

#include "kernels/trust.h"

#include <nvrtc.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#ifndef RT_DEFAULT_NVRTC
#define RT_DEFAULT_NVRTC "libnvrtc.so"
#endif

namespace reduce_tune {

#define RT_NVRTC_FUNCTIONS(X)                                                                     \
  X(nvrtcGetErrorString) X(nvrtcVersion) X(nvrtcGetNumSupportedArchs) X(nvrtcGetSupportedArchs)    \
  X(nvrtcCreateProgram) X(nvrtcDestroyProgram) X(nvrtcCompileProgram) X(nvrtcGetProgramLogSize)    \
  X(nvrtcGetProgramLog) X(nvrtcGetPTXSize) X(nvrtcGetPTX) X(nvrtcGetCUBINSize) X(nvrtcGetCUBIN)

struct Nvrtc::Api {
  void* handle = nullptr;
#define RT_NVRTC_MEMBER(f) decltype(&::f) f = nullptr;
  RT_NVRTC_FUNCTIONS(RT_NVRTC_MEMBER)
#undef RT_NVRTC_MEMBER
  ~Api() {
    if (handle) dlclose(handle);
  }
};

namespace {

// Owns an nvrtcProgram.
class Program {
public:
  Program(const Nvrtc::Api& api, const std::string& src, const std::string& name) : api_(api) {
    check(api.nvrtcCreateProgram(&p_, src.c_str(), name.c_str(), 0, nullptr, nullptr),
          "nvrtcCreateProgram");
  }
  ~Program() { api_.nvrtcDestroyProgram(&p_); }
  Program(const Program&) = delete;
  Program& operator=(const Program&) = delete;
  nvrtcProgram get() const { return p_; }
  void check(nvrtcResult r, const char* call) const {
    if (r != NVRTC_SUCCESS)
      throw std::runtime_error(std::string(call) + " failed: " + api_.nvrtcGetErrorString(r));
  }
  std::string log() const {
    std::size_t n = 0;
    check(api_.nvrtcGetProgramLogSize(p_, &n), "nvrtcGetProgramLogSize");
    std::string s(n, '\0');
    check(api_.nvrtcGetProgramLog(p_, s.data()), "nvrtcGetProgramLog");
    while (!s.empty() && s.back() == '\0') s.pop_back();
    return s;
  }
private:
  const Nvrtc::Api& api_;
  nvrtcProgram p_ = nullptr;
};

// CUDA releases whose NVRTC still targets an SM below the current one's range.
std::string toolkit_for(int cc) {
  if (cc < 30) return "no CUDA release NVRTC that reduce-tune supports (sm_30 and older)";
  if (cc < 50) return "CUDA 11.x (11.8 targets sm_35 and sm_37)";
  if (cc < 75) return "CUDA 12.x (or 11.x)";
  return "a newer CUDA";
}

std::uint64_t fnv1a(std::string_view s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

} // namespace

Nvrtc::Nvrtc(const std::string& path) : api_(std::make_unique<Api>()) {
  path_ = path;
  if (path_.empty()) {
    const char* env = std::getenv("REDUCE_TUNE_NVRTC");
    path_ = env && *env ? env : RT_DEFAULT_NVRTC;
  }
  api_->handle = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
#ifdef RT_NVRTC_FALLBACK_DIR
  // The default soname is not on the loader path: try the toolkit this build was made against.
  if (!api_->handle && path.empty() && path_ == RT_DEFAULT_NVRTC) {
    const std::string fallback = std::string(RT_NVRTC_FALLBACK_DIR) + "/" + path_;
    if ((api_->handle = dlopen(fallback.c_str(), RTLD_NOW | RTLD_LOCAL))) path_ = fallback;
  }
#endif
  if (!api_->handle) {
    const char* e = dlerror();
    throw std::runtime_error("cannot load NVRTC from '" + path_ + "': " + (e ? e : "unknown"));
  }
#define RT_NVRTC_LOAD(f)                                                                         \
  api_->f = reinterpret_cast<decltype(api_->f)>(dlsym(api_->handle, #f));                       \
  if (!api_->f)                                                                                  \
    throw std::runtime_error("'" + path_ + "' is not a usable NVRTC (CUDA 11.2 or newer): it lacks " #f);
  RT_NVRTC_FUNCTIONS(RT_NVRTC_LOAD)
#undef RT_NVRTC_LOAD
  if (api_->nvrtcVersion(&major_, &minor_) != NVRTC_SUCCESS)
    throw std::runtime_error("nvrtcVersion failed for '" + path_ + "'");
  int n = 0;
  if (api_->nvrtcGetNumSupportedArchs(&n) != NVRTC_SUCCESS)
    throw std::runtime_error("nvrtcGetNumSupportedArchs failed for '" + path_ + "'");
  archs_.resize(std::size_t(n));
  if (n > 0 && api_->nvrtcGetSupportedArchs(archs_.data()) != NVRTC_SUCCESS)
    throw std::runtime_error("nvrtcGetSupportedArchs failed for '" + path_ + "'");
  std::sort(archs_.begin(), archs_.end());
}

Nvrtc::~Nvrtc() = default;

int ArchTarget::number() const {
  const auto digits = arch.find_first_of("0123456789");
  return digits == std::string::npos ? 0 : std::atoi(arch.c_str() + digits);
}

ArchTarget Nvrtc::target_for(int cc) const {
  if (std::find(archs_.begin(), archs_.end(), cc) != archs_.end())
    return {"sm_" + std::to_string(cc), true};
  int best = -1;
  for (int a : archs_)
    if (a < cc) best = a;
  if (best < 0)
    throw std::invalid_argument("NVRTC " + version() + " does not target sm_" + std::to_string(cc) +
                                " (its lowest is sm_" +
                                std::to_string(archs_.empty() ? 0 : archs_.front()) +
                                "): use the NVRTC of " + toolkit_for(cc) + " with --nvrtc PATH");
  // A cubin runs on later minor revisions of its major; across majors only PTX carries forward.
  if (best / 10 == cc / 10) return {"sm_" + std::to_string(best), true};
  return {"compute_" + std::to_string(best), false};
}

ArchTarget Nvrtc::parse_target(const std::string& text) const {
  static const std::regex re(R"((sm_|compute_)?([0-9]{2,3})a?)");
  std::smatch m;
  if (!std::regex_match(text, m, re))
    throw std::invalid_argument("'" + text + "' is not an architecture (expected e.g. sm_90)");
  const int sm = std::stoi(m[2]);
  if (std::find(archs_.begin(), archs_.end(), sm) == archs_.end()) {
    std::string list;
    for (int a : archs_) list += " sm_" + std::to_string(a);
    throw std::invalid_argument("NVRTC " + version() + " does not target sm_" + m[2].str() +
                                "; it targets" + list + (sm < (archs_.empty() ? 0 : archs_.front())
                                    ? " (use the NVRTC of " + toolkit_for(sm) + ")" : ""));
  }
  const bool ptx = m[1] == "compute_";
  return {(ptx ? "compute_" : "sm_") + m[2].str(), !ptx};
}

std::vector<std::string> Nvrtc::options(const ArchTarget& target) const {
  std::vector<std::string> o = {"--gpu-architecture=" + target.arch, "-std=c++17",
                                "--device-as-default-execution-space"};
  // ptxas's resource report; NVRTC 11.8 takes the option too (checked with the PyPI wheel 11.8.89),
  // older 11.x releases are not known to.
  if (target.cubin && (major_ > 11 || (major_ == 11 && minor_ >= 8))) o.push_back("--ptxas-options=-v");
  return o;
}

Compiled Nvrtc::compile(const std::string& source, const std::string& name,
                        const ArchTarget& target) const {
  Program prog(*api_, source, name);
  const std::vector<std::string> opts = options(target);
  std::vector<const char*> argv;
  std::string joined;
  for (const auto& o : opts) argv.push_back(o.c_str()), joined += (joined.empty() ? "" : " ") + o;
  const nvrtcResult r = api_->nvrtcCompileProgram(prog.get(), int(argv.size()), argv.data());
  Compiled c;
  c.log = prog.log();
  c.target = target;
  if (r != NVRTC_SUCCESS)
    throw CompileError("NVRTC " + version() + " failed to compile " + name + " for " +
                           target.arch + " (" + api_->nvrtcGetErrorString(r) + ", options: " +
                           joined + "):\n" + c.log,
                       c.log, joined);
  std::size_t n = 0;
  if (target.cubin) {
    prog.check(api_->nvrtcGetCUBINSize(prog.get(), &n), "nvrtcGetCUBINSize");
    c.image.resize(n);
    prog.check(api_->nvrtcGetCUBIN(prog.get(), c.image.data()), "nvrtcGetCUBIN");
  } else {
    prog.check(api_->nvrtcGetPTXSize(prog.get(), &n), "nvrtcGetPTXSize");
    c.image.resize(n);
    prog.check(api_->nvrtcGetPTX(prog.get(), c.image.data()), "nvrtcGetPTX");
  }
  c.resources = parse_resources(c.log, entry_kernel(source));
  return c;
}

const char* entry_kernel(const std::string& source) {
  return source.find(" rt_segmented(RT_SEGMENTED_PARAMS)") != std::string::npos ? "rt_segmented"
                                                                                 : "rt_reduce";
}

Resources parse_resources(const std::string& log, const std::string& kernel) {
  Resources r;
  // ptxas prints, per entry: "Function properties for K" / "N bytes stack frame, N bytes spill
  // stores, N bytes spill loads" / "Used N registers, ... N bytes smem".
  const auto at = log.find("Function properties for " + kernel + "\n");
  if (at == std::string::npos) return r;
  const auto end = log.find("Compiling entry function", at);
  const std::string part = log.substr(at, end == std::string::npos ? std::string::npos : end - at);
  std::smatch m;
  if (std::regex_search(part, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads)")))
    r.stack_bytes = std::stoi(m[1]), r.spill_stores = std::stoi(m[2]), r.spill_loads = std::stoi(m[3]);
  if (std::regex_search(part, m, std::regex(R"(Used (\d+) registers)"))) r.registers = std::stoi(m[1]);
  if (std::regex_search(part, m, std::regex(R"((\d+) bytes smem)"))) r.smem_bytes = std::stoi(m[1]);
  else if (r.registers >= 0) r.smem_bytes = 0;
  return r;
}

CompileCache::CompileCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  create_private_directories(dir_);
  if (auto why = untrusted_cache_dir(dir_)) throw UntrustedDirectory(*why, dir_);
}

std::filesystem::path CompileCache::default_dir() {
  if (const char* e = std::getenv("REDUCE_TUNE_CACHE"); e && *e) return e;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "reduce-tune" / "kernels";
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : "/tmp") / ".cache" / "reduce-tune" / "kernels";
}

namespace {

// Cache file: "reduce-tune-kernel 1\n" then key, log and image, each as "<bytes>\n<bytes of data>",
// then the target and resources on one line.
void put(std::ostream& o, const std::string& s) { o << s.size() << '\n' << s; }
bool take(std::istream& i, std::string& s) {
  std::size_t n = 0;
  if (!(i >> n) || i.get() != '\n' || n > (1u << 30)) return false;
  s.resize(n);
  return bool(i.read(s.data(), std::streamsize(n)));
}

} // namespace

Compiled CompileCache::get(const Nvrtc& nvrtc, const std::string& source, const ArchTarget& target) {
  std::string key = "nvrtc " + nvrtc.version() + "\n";
  for (const auto& o : nvrtc.options(target)) key += o + "\n";
  key += source;
  const auto file = dir_ / (std::to_string(fnv1a(key)) + ".kernel");
  if (!dir_.empty()) {
    std::ifstream in(file, std::ios::binary);
    std::string magic, stored_key, log, image;
    if (in && std::getline(in, magic) && magic == "reduce-tune-kernel 1" && take(in, stored_key) &&
        stored_key == key && take(in, log) && take(in, image)) {
      Compiled c;
      c.image = std::move(image);
      c.log = std::move(log);
      c.target = target;
      c.resources = parse_resources(c.log, entry_kernel(source));
      c.from_cache = true;
      ++hits_;
      return c;
    }
  }
  ++misses_;
  Compiled c = nvrtc.compile(source, "reduce_tune.cu", target);
  if (!dir_.empty()) {
    std::ostringstream tid;
    tid << std::this_thread::get_id();
    const auto tmp = file.string() + ".tmp." + tid.str();
    {
      std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
      out << "reduce-tune-kernel 1\n";
      put(out, key);
      put(out, c.log);
      put(out, c.image);
      if (!out) throw std::runtime_error("cannot write compile cache file " + tmp);
    }
    std::filesystem::rename(tmp, file); // atomic: readers see the old file or the new one
  }
  return c;
}

} // namespace reduce_tune
