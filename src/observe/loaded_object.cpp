#include "src/observe/loaded_object.h"

#include <dlfcn.h>
#include <link.h>

#include <cstring>
#include <filesystem>
#include <string>

namespace conveyor::detail {
namespace {

std::string program_path() {
  std::error_code error;
  auto path = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::string("(the program)") : path.string();
}

LoadedObject describe(const char* loader_path) {
  LoadedObject object;
  // dladdr names the main program by argv[0] or "", so ask /proc for its real path.
  if (loader_path == nullptr || *loader_path == '\0') {
    object.path = program_path();
    object.is_program = true;
  } else {
    object.path = loader_path;
    object.is_program = object.path == program_path();
  }
  std::error_code error;
  const auto real = std::filesystem::canonical(object.path, error);
  object.real_path = error ? object.path : real.string();
  return object;
}

// dl_iterate_phdr callback state: the segments of the object containing `address`.
struct SegmentSearch {
  const void* address = nullptr;
  std::string_view prefix;
  char terminator = '\0';
  std::optional<std::string> found;
};

bool contains(const dl_phdr_info& info, const void* address) {
  const auto where = reinterpret_cast<ElfW(Addr)>(address);
  for (int i = 0; i < info.dlpi_phnum; ++i) {
    const ElfW(Phdr)& segment = info.dlpi_phdr[i];
    if (segment.p_type != PT_LOAD) continue;
    const ElfW(Addr) start = info.dlpi_addr + segment.p_vaddr;
    if (where >= start && where < start + segment.p_memsz) return true;
  }
  return false;
}

int search_segments(dl_phdr_info* info, std::size_t, void* data) {
  auto& search = *static_cast<SegmentSearch*>(data);
  if (!contains(*info, search.address)) return 0;
  for (int i = 0; i < info->dlpi_phnum && !search.found; ++i) {
    const ElfW(Phdr)& segment = info->dlpi_phdr[i];
    // Constant strings live in read-only segments; writable ones may change under us.
    if (segment.p_type != PT_LOAD || !(segment.p_flags & PF_R) || (segment.p_flags & PF_W)) continue;
    // The loader reports where it mapped the object as an integer: turning it back into a pointer is the
    // point.
    const char* begin = reinterpret_cast<const char*>(  // NOLINT(performance-no-int-to-ptr)
        info->dlpi_addr + segment.p_vaddr);
    const std::string_view memory(begin, segment.p_filesz);
    const std::size_t at = memory.find(search.prefix);
    if (at == std::string_view::npos) continue;
    std::size_t end = at;
    while (end < memory.size() && memory[end] != search.terminator && memory[end] != '\0') ++end;
    search.found = std::string(memory.substr(at, end - at));
  }
  return 1;  // the object was found: stop iterating
}

struct NameSearch {
  std::string_view fragment;
  std::optional<LoadedObject> found;
};

int search_names(dl_phdr_info* info, std::size_t, void* data) {
  auto& search = *static_cast<NameSearch*>(data);
  if (info->dlpi_name == nullptr || *info->dlpi_name == '\0') return 0;
  const std::string name = std::filesystem::path(info->dlpi_name).filename().string();
  if (name.find(search.fragment) == std::string::npos) return 0;
  search.found = describe(info->dlpi_name);
  return 1;
}

}  // namespace

std::optional<LoadedObject> object_defining(const char* symbol, const void* fallback) {
  const void* address = dlsym(RTLD_DEFAULT, symbol);
  if (address == nullptr) address = fallback;
  Dl_info info{};
  if (address == nullptr || dladdr(address, &info) == 0) return std::nullopt;
  LoadedObject object = describe(info.dli_fname);
  object.address = address;
  return object;
}

std::optional<LoadedObject> object_named(std::string_view fragment) {
  NameSearch search{fragment, std::nullopt};
  dl_iterate_phdr(search_names, &search);
  return search.found;
}

std::optional<std::string> find_text_in_object(const void* address, std::string_view prefix,
                                               char terminator) {
  SegmentSearch search{address, prefix, terminator, std::nullopt};
  dl_iterate_phdr(search_segments, &search);
  return search.found;
}

}  // namespace conveyor::detail
