//===- KernelObjectStore.cpp - Compiled kernels kept on disk --------------===//
#include "dynb/JIT/KernelObjectStore.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SHA256.h"

#include <array>
#include <cstring>
#include <optional>

using namespace dynb;

namespace {

// An entry: magic, the object's size (little-endian u64), the SHA-256 of the
// key, the SHA-256 of the object, then the object. The key digest catches an
// entry copied or renamed from another key; the object digest catches a
// torn or damaged one.
constexpr char kMagic[8] = {'D', 'Y', 'N', 'B', 'K', 'O', 'B', '1'};
constexpr size_t kDigestBytes = 32;
constexpr size_t kHeaderBytes = sizeof(kMagic) + 8 + 2 * kDigestBytes;

std::array<uint8_t, kDigestBytes> digest(llvm::StringRef bytes) {
  return llvm::SHA256::hash(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size()));
}

llvm::StringRef asText(const std::array<uint8_t, kDigestBytes> &d) {
  return llvm::StringRef(reinterpret_cast<const char *>(d.data()), d.size());
}

} // namespace

KernelObjectStore::KernelObjectStore(std::string directory)
    : directory_(std::move(directory)) {}

std::unique_ptr<KernelObjectStore>
KernelObjectStore::open(const KernelCacheOptions &options) {
  if (!options.persistent)
    return nullptr;
  std::string dir =
      options.directory.empty() ? defaultDirectory() : options.directory;
  if (dir.empty())
    return nullptr;
  return std::make_unique<KernelObjectStore>(std::move(dir));
}

std::string KernelObjectStore::defaultDirectory() {
  if (std::optional<std::string> dir =
          llvm::sys::Process::GetEnv("DYNB_CACHE_DIR");
      dir && !dir->empty())
    return *dir;
  llvm::SmallString<256> dir;
  if (!llvm::sys::path::cache_directory(dir))
    return "";
  llvm::sys::path::append(dir, "dynb", "kernels");
  return std::string(dir);
}

std::string KernelObjectStore::entryPath(llvm::StringRef key) const {
  llvm::SmallString<256> path(directory_);
  llvm::sys::path::append(path, llvm::toHex(asText(digest(key)),
                                            /*LowerCase=*/true) +
                                    ".dynbk");
  return std::string(path);
}

std::unique_ptr<llvm::MemoryBuffer>
KernelObjectStore::load(llvm::StringRef key,
                        llvm::raw_ostream &warnings) const {
  std::string path = entryPath(key);
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!file)
    return nullptr; // no entry yet (or unreadable: rebuilt and rewritten)
  llvm::StringRef bytes = (*file)->getBuffer();
  auto reject = [&](llvm::StringRef why) {
    warnings << "warning: kernel cache entry " << path << " " << why
             << "; compiling the module again\n";
    return nullptr;
  };
  if (bytes.size() < sizeof(kMagic) ||
      std::memcmp(bytes.data(), kMagic, sizeof(kMagic)) != 0)
    return reject("is not a dynb kernel cache entry");
  if (bytes.size() < kHeaderBytes ||
      llvm::support::endian::read64le(bytes.data() + 8) !=
          bytes.size() - kHeaderBytes)
    return reject("is truncated");
  llvm::StringRef keyDigest = bytes.substr(16, kDigestBytes);
  llvm::StringRef objectDigest = bytes.substr(16 + kDigestBytes, kDigestBytes);
  llvm::StringRef object = bytes.substr(kHeaderBytes);
  if (keyDigest != asText(digest(key)))
    return reject("belongs to another module");
  if (objectDigest != asText(digest(object)))
    return reject("fails its checksum");
  return llvm::MemoryBuffer::getMemBufferCopy(object, path);
}

void KernelObjectStore::store(llvm::StringRef key, llvm::StringRef object,
                              llvm::raw_ostream &warnings) const {
  std::string path = entryPath(key);
  auto fail = [&](const llvm::Twine &why) {
    warnings << "warning: cannot write kernel cache entry " << path << ": "
             << why << "\n";
  };
  if (std::error_code ec = llvm::sys::fs::create_directories(directory_))
    return fail(ec.message());
  // Written whole under a unique name, then renamed over the entry: rename
  // is atomic, so readers and other writers never see a partial entry.
  auto temp = llvm::sys::fs::TempFile::create(path + ".tmp-%%%%%%%%");
  if (!temp)
    return fail(llvm::toString(temp.takeError()));
  {
    llvm::raw_fd_ostream os(temp->FD, /*shouldClose=*/false);
    os.write(kMagic, sizeof(kMagic));
    char size[8];
    llvm::support::endian::write64le(size, object.size());
    os.write(size, sizeof(size));
    os << asText(digest(key)) << asText(digest(object)) << object;
    os.flush();
    if (os.has_error()) {
      std::error_code ec = os.error();
      os.clear_error();
      if (llvm::Error e = temp->discard())
        llvm::consumeError(std::move(e));
      return fail(ec.message());
    }
  }
  if (llvm::Error e = temp->keep(path))
    fail(llvm::toString(std::move(e)));
}
