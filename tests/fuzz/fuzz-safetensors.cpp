//===- fuzz-safetensors.cpp - Fuzzes the safetensors reader ---------------===//
//
// dynb::loadSafetensors reads a path, so each input is written to a
// memory-backed file (a memfd, read back through /proc/self/fd; /dev/shm if
// memfds are unavailable) that is rewritten in place for every input:
// nothing touches the disk and the library gets no fuzzing hook.
//
//===----------------------------------------------------------------------===//
#include "FuzzAssert.h"

#include "dynb/Import/Safetensors.h"
#include "dynb/Runtime/ParameterStore.h"

#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fcntl.h>
#include <string>
#include <sys/mman.h>
#include <unistd.h>

namespace {

struct ShmFile {
  int fd = -1;
  std::string path;

  ShmFile() {
#ifdef MFD_CLOEXEC
    fd = memfd_create("dynb-fuzz-safetensors", MFD_CLOEXEC);
    if (fd >= 0) {
      path = "/proc/self/fd/" + std::to_string(fd);
      return;
    }
#endif
    path = "/dev/shm/dynb-fuzz-safetensors." + std::to_string(getpid());
    fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
      perror("fuzz-safetensors: cannot create a memory-backed file");
      std::abort();
    }
  }
  ~ShmFile() {
    if (path.rfind("/dev/shm/", 0) == 0)
      unlink(path.c_str());
  }

  void write(const uint8_t *data, size_t size) {
    if (ftruncate(fd, 0) != 0 ||
        (size && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size))) {
      perror("fuzz-safetensors: cannot write the input");
      std::abort();
    }
  }
};

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static ShmFile file;
  file.write(data, size);
  dynb::rt::ParameterStore store;
  llvm::Error err = dynb::loadSafetensors(file.path, store);
  llvm::consumeError(std::move(err));
  // Whatever was accepted must be consistent.
  for (const std::string &name : store.names()) {
    const dynb::rt::ParamTensor *t = store.find(name);
    FUZZ_ASSERT_INVARIANT(
        !(!t || static_cast<int64_t>(t->data.size()) != t->numElements()));
  }
  return 0;
}
