//===- KernelObjectStore.h - Compiled kernels kept on disk -------*- C++
//-*-===//
//
// A process that runs a model it ran before should not compile it again: the
// JIT's object code, keyed by everything that decides it, is kept in a
// directory that any number of processes share. An entry carries its key's
// digest and a checksum of its object, so a truncated, corrupted or foreign
// entry is found and rebuilt, never loaded; entries are written to a
// temporary file and renamed into place, so a reader sees a whole entry or
// none, whatever other processes do at the same time.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_JIT_KERNELOBJECTSTORE_H
#define DYNB_JIT_KERNELOBJECTSTORE_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <memory>
#include <string>

namespace dynb {

/// Whether and where compiled kernels persist between processes.
struct KernelCacheOptions {
  bool persistent = true;
  /// Empty: KernelObjectStore::defaultDirectory().
  std::string directory;
};

class KernelObjectStore {
public:
  /// Uses (and creates when needed) `directory`.
  explicit KernelObjectStore(std::string directory);

  /// The store `options` ask for, or null (not persistent, or no directory
  /// could be found).
  static std::unique_ptr<KernelObjectStore>
  open(const KernelCacheOptions &options);

  /// $DYNB_CACHE_DIR when set, else the per-user cache directory's
  /// dynb/kernels ($XDG_CACHE_HOME, or ~/.cache); empty when none is found.
  static std::string defaultDirectory();

  const std::string &directory() const { return directory_; }

  /// The object stored under `key`, or null when there is none. An entry
  /// that fails its checks is reported on `warnings` (naming the file and
  /// why) and treated as absent; storing the rebuilt object replaces it.
  std::unique_ptr<llvm::MemoryBuffer> load(llvm::StringRef key,
                                           llvm::raw_ostream &warnings) const;

  /// Stores `object` under `key`, replacing any entry. Failures (a
  /// read-only or full disk) are reported on `warnings`: the cache is an
  /// optimisation, and the run goes on without it.
  void store(llvm::StringRef key, llvm::StringRef object,
             llvm::raw_ostream &warnings) const;

  /// The entry file of `key` (for tests and messages).
  std::string entryPath(llvm::StringRef key) const;

private:
  std::string directory_;
};

} // namespace dynb

#endif // DYNB_JIT_KERNELOBJECTSTORE_H
