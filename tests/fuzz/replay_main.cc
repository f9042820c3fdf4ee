// A main() that replays a fuzz corpus through LLVMFuzzerTestOneInput, for
// builds without libFuzzer (gcc, CI): every regular file under each
// argument (a file or a directory, walked recursively, in sorted order) is
// one input. Exits 1 if no input was found (a corpus that went missing must
// not pass); a finding aborts (FUZZ_CHECK, ASan, UBSan) and so fails the
// test. Prints the number of inputs replayed.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

namespace fs = std::filesystem;

// Appends the regular files at `arg` to `out`. False (with a message) if
// `arg` does not exist or cannot be walked.
bool CollectInputs(const std::string& arg, std::vector<fs::path>* out) {
  std::error_code ec;
  if (fs::is_regular_file(arg, ec)) {
    out->push_back(arg);
    return true;
  }
  if (!fs::is_directory(arg, ec)) {
    std::fprintf(stderr, "replay: %s is neither a file nor a directory\n",
                 arg.c_str());
    return false;
  }
  for (fs::recursive_directory_iterator it(arg, ec), end; !ec && it != end;
       it.increment(ec)) {
    if (it->is_regular_file(ec)) out->push_back(it->path());
  }
  if (ec) {
    std::fprintf(stderr, "replay: walking %s: %s\n", arg.c_str(),
                 ec.message().c_str());
    return false;
  }
  return true;
}

bool ReadFile(const fs::path& path, std::string* out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  out->assign(std::istreambuf_iterator<char>(f),
              std::istreambuf_iterator<char>());
  return !f.bad();
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<fs::path> inputs;
  for (int i = 1; i < argc; ++i) {
    if (!CollectInputs(argv[i], &inputs)) return 1;
  }
  std::sort(inputs.begin(), inputs.end());
  if (inputs.empty()) {
    std::fprintf(stderr, "replay: no inputs found\n");
    return 1;
  }
  std::string data;
  for (const fs::path& p : inputs) {
    if (!ReadFile(p, &data)) {
      std::fprintf(stderr, "replay: cannot read %s\n", p.c_str());
      return 1;
    }
    std::fprintf(stderr, "replay: %s\n", p.c_str());
    // A copy of exactly the input's size, so ASan catches reads past it.
    std::vector<uint8_t> exact(data.begin(), data.end());
    LLVMFuzzerTestOneInput(exact.data(), exact.size());
  }
  std::printf("replayed %zu inputs\n", inputs.size());
  return 0;
}
