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

static std::string printedKey(func::FuncOp fn) {
  std::string key;
  llvm::raw_string_ostream os(key);
  fn->print(os, OpPrintingFlags().printGenericOpForm().useLocalScope());
  return os.str();
}

static RankedTensorType dropBatch(Type t) {
  auto r = cast<RankedTensorType>(t);
  return RankedTensorType::get(r.getShape().drop_front(), r.getElementType());
}

FailureOr<func::FuncOp> KernelCache::wrapOp(Operation *op,
                                            OwningOpRef<ModuleOp> &holder) {
  SmallVector<Type> args, results;
  for (Type t : op->getOperandTypes())
    args.push_back(dropBatch(t));
  for (Type t : op->getResultTypes())
    results.push_back(dropBatch(t));
  // Built in the op's own context (a streamed batch has one of its own),
  // in a module that lives as long as the caller needs the wrapper.
  holder = ModuleOp::create(op->getLoc());
  OpBuilder b = OpBuilder::atBlockEnd(holder->getBody());
  std::string name = "op_" + op->getName().stripDialect().str() + "_" +
                     std::to_string(entries_.size());
  auto fn = b.create<func::FuncOp>(op->getLoc(), name,
                                   b.getFunctionType(args, results));
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToEnd(body);
  OperationState state(op->getLoc(), op->getName());
  state.addOperands(body->getArguments());
  state.addAttributes(op->getAttrs());
  state.addTypes(results);
  Operation *clone = b.create(state);
  b.create<func::ReturnOp>(op->getLoc(), clone->getResults());
  return fn;
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
  if (failed(lowered) || failed(jitCompile(**lowered)))
    return failure();
  // The kernels' IR is in the context of `fn`, which may be a streamed
  // batch's and go before this cache does; the JIT's code does not need it.
  (*lowered)->kernels = nullptr;
  stats_.jitSeconds +=
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
          .count();
  ++stats_.compiled;
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
  if (auto fn = dyn_cast<func::FuncOp>(op))
    return lowerModuleBody(fn, fn.getName());
  if (auto dispatch = dyn_cast<DispatchOp>(op)) {
    // The runtime's part (gate, routing, combine) has no kernels: show the
    // expert module's steps under a line that says how they are run.
    auto experts = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
        op, dispatch.getExpertsAttr());
    auto lowered = lowerModuleBody(experts, experts.getName());
    if (failed(lowered))
      return failure();
    std::string header;
    llvm::raw_string_ostream os(header);
    os << "// dispatch: gate @" << dispatch.getGate();
    if (auto noise = dispatch.getNoise())
      os << " + noise @" << *noise;
    os << ", top " << dispatch.getKAttr().getInt() << " of "
       << expertCount(experts)
       << " experts; rows grouped by expert (counting sort), expert module "
          "@"
       << experts.getName()
       << " run per used expert on its rows (GEMMs read expert e's slice of "
          "stacked weights, kernels run once over every routed row), "
          "gate-weighted sum back in row order\n";
    (*lowered)->header = os.str();
    return lowered;
  }
  OwningOpRef<ModuleOp> holder;
  FailureOr<func::FuncOp> fn = wrapOp(op, holder);
  if (failed(fn))
    return failure();
  return lowerModuleBody(*fn, fn->getName());
}
