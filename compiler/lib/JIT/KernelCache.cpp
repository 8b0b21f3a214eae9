//===- KernelCache.cpp - Compile each module once -------------------------===//
#include "dynb/JIT/KernelCache.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/JIT/KernelCompiler.h"

#include "mlir/IR/Builders.h"
#include "llvm/Support/raw_ostream.h"

#include <chrono>

using namespace mlir;
using namespace dynb;

KernelCache::KernelCache() = default;
KernelCache::~KernelCache() = default;

void KernelCache::setObjectStore(std::unique_ptr<KernelObjectStore> store) {
  store_ = std::move(store);
}

static std::string printedKey(func::FuncOp fn) {
  std::string key;
  llvm::raw_string_ostream os(key);
  fn->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  return os.str();
}

FailureOr<func::FuncOp> KernelCache::wrapOp(Operation *op,
                                            OwningOpRef<ModuleOp> &holder) {
  return wrapBatchedOp(op, wrapperName(op), holder);
}

std::string KernelCache::wrapperName(Operation *op) const {
  return "op_" + op->getName().stripDialect().str() + "_" +
         std::to_string(entries_.size());
}

FailureOr<const LoweredModule *> KernelCache::lookupOrCompile(func::FuncOp fn,
                                                              StringRef tag) {
  std::string key = printedKey(fn);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++stats_.hits;
    return it->second.get();
  }
  return compile(fn, std::move(key), tag);
}

FailureOr<const LoweredModule *>
KernelCache::compile(func::FuncOp fn, std::string key, StringRef tag) {
  auto start = std::chrono::steady_clock::now();
  auto lowered = lowerModuleBody(fn, tag);
  if (failed(lowered))
    return failure();
  FailureOr<JitOutcome> outcome = jitCompile(**lowered, store_.get());
  if (failed(outcome))
    return failure();
  // The kernels' IR is in the context of `fn`, which may be a streamed
  // batch's and go before this cache does; the JIT's code does not need it.
  (*lowered)->kernels = nullptr;
  stats_.jitSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  if (*outcome == JitOutcome::Compiled)
    ++stats_.compiled;
  else if (*outcome == JitOutcome::Loaded)
    ++stats_.loaded;
  LoweredModule *result = lowered->get();
  entries_[key] = std::move(*lowered);
  return result;
}

FailureOr<const LoweredModule *> KernelCache::getModule(func::FuncOp fn) {
  return lookupOrCompile(
      fn, ("m" + std::to_string(entries_.size()) + "_" + fn.getName()).str());
}

FailureOr<const LoweredModule *> KernelCache::getOp(Operation *batchedOp) {
  OwningOpRef<ModuleOp> holder;
  FailureOr<func::FuncOp> fn = wrapOp(batchedOp, holder);
  if (failed(fn))
    return failure();
  // The wrapper's name differs per call; key on the op alone.
  std::string name = fn->getName().str();
  fn->setName("op");
  std::string key = printedKey(*fn);
  auto it = entries_.find(key);
  if (it != entries_.end()) {
    ++stats_.hits;
    return it->second.get();
  }
  fn->setName(name);
  return compile(*fn, std::move(key), name);
}

FailureOr<std::unique_ptr<LoweredModule>>
KernelCache::lowerOnly(Operation *op) {
  return lowerLaunch(op, wrapperName(op));
}
