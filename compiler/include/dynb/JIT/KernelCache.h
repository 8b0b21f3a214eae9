//===- KernelCache.h - Compiled modules, keyed by what they compute -*- C++
//-*-===//
#ifndef DYNB_JIT_KERNELCACHE_H
#define DYNB_JIT_KERNELCACHE_H

#include "dynb/JIT/KernelObjectStore.h"
#include "dynb/Lowering/ModuleLowering.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringMap.h"

#include <memory>

namespace dynb {

struct KernelCacheStats {
  unsigned compiled = 0; // modules JIT-compiled (those with kernels)
  unsigned loaded = 0;   // modules loaded from the persistent kernel cache
  unsigned hits = 0;     // lookups answered from the cache
  double jitSeconds = 0; // time spent lowering and compiling, or loading
};

/// Lowered, JIT-compiled modules keyed by their printed body (so two modules
/// that compute the same thing share code, and a new batch of differently
/// shaped trees compiles nothing). The batch size is a runtime argument of
/// every kernel, so one entry serves every group size. Modules may come from
/// any context, and keep nothing of it once compiled.
class KernelCache {
public:
  KernelCache();
  ~KernelCache();

  /// Keeps compiled modules in `store` and loads them from it (a second
  /// process compiles nothing); without one, every process compiles.
  void setObjectStore(std::unique_ptr<KernelObjectStore> store);
  const KernelObjectStore *objectStore() const { return store_.get(); }

  /// The compiled form of module `fn`.
  mlir::FailureOr<const LoweredModule *> getModule(mlir::func::FuncOp fn);
  /// The compiled form of a batched per-instance op found in a schedule
  /// (`dynb.linear`, `dynb.add`, ...), wrapped as a module of one op.
  mlir::FailureOr<const LoweredModule *> getOp(mlir::Operation *batchedOp);

  /// Lowers without compiling, for `--emit=linalg|llvm`.
  mlir::FailureOr<std::unique_ptr<LoweredModule>>
  lowerOnly(mlir::Operation *calleeOrBatchedOp);

  const KernelCacheStats &stats() const { return stats_; }

private:
  /// `batchedOp` as a module of one op, in a new module put in `holder`.
  mlir::FailureOr<mlir::func::FuncOp>
  wrapOp(mlir::Operation *batchedOp, mlir::OwningOpRef<mlir::ModuleOp> &holder);
  /// The name of `batchedOp`'s wrapper module: op_<name>_<entries so far>.
  std::string wrapperName(mlir::Operation *batchedOp) const;
  mlir::FailureOr<const LoweredModule *> lookupOrCompile(mlir::func::FuncOp fn,
                                                         llvm::StringRef tag);
  /// Lowers and JIT-compiles `fn` and stores it under `key`.
  mlir::FailureOr<const LoweredModule *>
  compile(mlir::func::FuncOp fn, std::string key, llvm::StringRef tag);

  llvm::StringMap<std::unique_ptr<LoweredModule>> entries_;
  std::unique_ptr<KernelObjectStore> store_;
  KernelCacheStats stats_;
};

} // namespace dynb

#endif // DYNB_JIT_KERNELCACHE_H
