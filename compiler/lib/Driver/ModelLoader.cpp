//===- ModelLoader.cpp - A model, its instances and parameters, loaded ---===//
#include "dynb/Driver/ModelLoader.h"
#include "dynb/Dialect/DynbOps.h"
#include "dynb/Dialect/Registration.h"
#include "dynb/Driver/ByteSize.h"
#include "dynb/Import/GraphImporter.h"
#include "dynb/Import/Safetensors.h"
#include "dynb/Lowering/ModuleLowering.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <chrono>
#include <string>

using namespace mlir;
using namespace dynb;

namespace {
llvm::Error makeError(const llvm::Twine &msg) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), msg);
}

std::string shapeString(llvm::ArrayRef<int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
} // namespace

/// Whether the source manager handler may quote the line `loc` names: the
/// file is one it holds and the line is short. Otherwise it would open the
/// file itself, and a hostile file is often one line of megabytes.
static bool quotableLine(llvm::SourceMgr &sources, FileLineColLoc loc) {
  constexpr size_t kMaxQuotedLine = 512;
  for (unsigned id = 1; id <= sources.getNumBuffers(); ++id) {
    const llvm::MemoryBuffer *buffer = sources.getMemoryBuffer(id);
    if (buffer->getBufferIdentifier() != loc.getFilename().strref())
      continue;
    llvm::SMLoc start = sources.FindLocForLineAndColumn(id, loc.getLine(), 1);
    if (!start.isValid())
      return false;
    StringRef rest(start.getPointer(),
                   buffer->getBufferEnd() - start.getPointer());
    return rest.take_front(kMaxQuotedLine + 1).find('\n') <= kMaxQuotedLine ||
           rest.size() <= kMaxQuotedLine;
  }
  return false;
}

std::unique_ptr<ScopedDiagnosticHandler>
dynb::attachJsonDiagnostics(MLIRContext &ctx, llvm::raw_ostream &diagnostics,
                            llvm::SourceMgr *mlirSources) {
  return std::make_unique<ScopedDiagnosticHandler>(
      &ctx, [&diagnostics, mlirSources](Diagnostic &diag) -> LogicalResult {
        auto name = dyn_cast<NameLoc>(diag.getLocation());
        auto file = name ? dyn_cast<FileLineColLoc>(name.getChildLoc())
                         : dyn_cast<FileLineColLoc>(diag.getLocation());
        if (!file)
          return failure();
        if (file.getFilename().strref().ends_with(".mlir") &&
            (!mlirSources || quotableLine(*mlirSources, file)))
          return failure();
        auto print = [&](Diagnostic &d, StringRef kind) {
          Location l = d.getLocation();
          auto n = dyn_cast<NameLoc>(l);
          auto f = n ? dyn_cast<FileLineColLoc>(n.getChildLoc())
                     : dyn_cast<FileLineColLoc>(l);
          if (f)
            diagnostics << f.getFilename().strref() << ":" << f.getLine() << ":"
                        << f.getColumn() << ": ";
          diagnostics << kind << ": ";
          if (n)
            diagnostics << n.getName().strref() << ": ";
          diagnostics << d << "\n";
        };
        StringRef kind =
            diag.getSeverity() == DiagnosticSeverity::Error     ? "error"
            : diag.getSeverity() == DiagnosticSeverity::Warning ? "warning"
                                                                : "note";
        print(diag, kind);
        for (Diagnostic &note : diag.getNotes())
          print(note, "note");
        return success();
      });
}

ModelLoader::ModelLoader(llvm::raw_ostream &diagnostics)
    : diagnostics_(diagnostics),
      ctx_(std::make_unique<MLIRContext>(MLIRContext::Threading::DISABLED)) {
  loadDynbDialects(*ctx_);
  loadLoweringDialects(*ctx_);
  // Users read these diagnostics, not compiler developers: no IR dumps, and
  // no source excerpt for JSON, whose one line can be megabytes.
  ctx_->printOpOnDiagnostic(false);
  diagHandler_ = std::make_unique<SourceMgrDiagnosticHandler>(
      sourceMgr_, ctx_.get(), diagnostics, [](Location loc) {
        auto file = dyn_cast<FileLineColLoc>(loc);
        return !file || file.getFilename().strref().ends_with(".mlir");
      });
  jsonDiagHandler_ = attachJsonDiagnostics(*ctx_, diagnostics, &sourceMgr_);
  kernels_ = std::make_unique<KernelCache>();
}

ModelLoader::~ModelLoader() = default;

LogicalResult ModelLoader::loadGraphs(StringRef path) {
  auto t0 = std::chrono::steady_clock::now();
  auto timed = llvm::make_scope_exit([&] {
    loadSeconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
  });
  ImportLimits importLimits = limits_.importLimits();
  // CLEVR's own question files become IEP instances (ClevrImporter.h).
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> clevrText =
      path.ends_with(".json")
          ? llvm::MemoryBuffer::getFile(path, true)
          : std::make_error_code(std::errc::invalid_argument);
  if (clevrText && looksLikeClevrQuestions((*clevrText)->getBuffer()))
    module_ = importClevrQuestions(path, (*clevrText)->getBuffer(), *ctx_,
                                   clevr_, importLimits);
  else
    module_ = importGraphFile(path, *ctx_, sourceMgr_, importLimits);
  return checkLoaded();
}

LogicalResult ModelLoader::loadJsonGraphs(StringRef name, StringRef text) {
  ImportLimits importLimits = limits_.importLimits();
  module_ = importJsonGraphs(name, text, *ctx_, importLimits);
  return checkLoaded();
}

LogicalResult ModelLoader::loadJsonModel(StringRef name,
                                         const llvm::json::Object &model) {
  ImportLimits importLimits = limits_.importLimits();
  module_ = importJsonModel(name, model, *ctx_, importLimits);
  return checkLoaded();
}

LogicalResult ModelLoader::checkLoaded() {
  if (!module_)
    return failure();
  // What the runtime path needs beyond the verifier: unbatched input, and
  // modules without calls (the batched path runs module bodies as flat step
  // lists).
  for (ScheduleOp s : module_->getOps<ScheduleOp>()) {
    s.emitOpError() << "is a batched schedule: dynb batches instances "
                       "itself, give it the unbatched graphs";
    return failure();
  }
  bool ok = true;
  module_->walk([&](func::FuncOp fn) {
    fn.walk([&](CallOp call) {
      call.emitOpError() << "inside module @" << fn.getName()
                         << ": modules cannot call modules yet";
      ok = false;
    });
  });
  return success(ok);
}

llvm::Error ModelLoader::checkParams() {
  for (ParamOp p : module_->getOps<ParamOp>()) {
    const rt::ParamTensor *t = params_.find(p.getSymName());
    ArrayRef<int64_t> want = p.getTensorType().getShape();
    if (!t)
      return makeError("no values for parameter '" + p.getSymName() + "' " +
                       shapeString(want));
    if (ArrayRef<int64_t>(t->shape) != want)
      return makeError("parameter '" + p.getSymName() + "' has shape " +
                       shapeString(t->shape) + " but the model declares " +
                       shapeString(want));
  }
  return llvm::Error::success();
}

llvm::Error ModelLoader::loadParams(StringRef path) {
  if (llvm::Error e = loadSafetensors(path, params_, limits_.maxMemoryBytes,
                                      limits_.memoryLimitName))
    return e;
  if (llvm::Error e = checkParams())
    return makeError(path + ": " + llvm::toString(std::move(e)));
  return llvm::Error::success();
}

llvm::Error ModelLoader::loadMoreParams(StringRef path) {
  rt::ParameterStore more;
  if (llvm::Error e = loadSafetensors(path, more, limits_.maxMemoryBytes,
                                      limits_.memoryLimitName))
    return e;
  for (const std::string &name : more.names()) {
    const rt::ParamTensor *t = more.find(name);
    if (rt::Status s = params_.add(name, t->shape, t->data))
      return makeError(path + ": " + s.message());
  }
  if (llvm::Error e = checkParams())
    return makeError(path + ": " + llvm::toString(std::move(e)));
  return llvm::Error::success();
}

llvm::Error ModelLoader::copyParams(const rt::ParameterStore &from,
                                    StringRef owner) {
  for (ParamOp p : module_->getOps<ParamOp>()) {
    const rt::ParamTensor *t = from.find(p.getSymName());
    ArrayRef<int64_t> want = p.getTensorType().getShape();
    if (!t)
      return makeError(graphFile() + ": parameter '" + p.getSymName() +
                       "' is not in " + owner);
    if (ArrayRef<int64_t>(t->shape) != want)
      return makeError(graphFile() + ": parameter '" + p.getSymName() +
                       "' is " + shapeString(want) + " here but " +
                       shapeString(t->shape) + " in " + owner);
    if (rt::Status s = params_.add(p.getSymName().str(), t->shape, t->data))
      return makeError(graphFile() + ": " + s.message());
  }
  return llvm::Error::success();
}

uint64_t ModelLoader::parameterBytes() {
  uint64_t bytes = 0;
  for (ParamOp p : module_->getOps<ParamOp>())
    bytes += uint64_t(p.getTensorType().getNumElements()) * sizeof(float);
  return bytes;
}

static std::string gib(uint64_t bytes) { return formatByteSize(bytes); }

std::string ModelLoader::graphFile() {
  if (auto loc = dyn_cast<FileLineColLoc>(module_->getLoc()))
    return loc.getFilename().str();
  return "the input";
}

llvm::Error ModelLoader::seedParams(uint64_t seed) {
  uint64_t bytes = parameterBytes();
  if (limits_.maxMemoryBytes && bytes > limits_.maxMemoryBytes)
    return makeError(graphFile() + ": the model's parameters need " +
                     gib(bytes) + ", more than " + limits_.memoryLimitName +
                     " of " + gib(limits_.maxMemoryBytes) +
                     "; raise it to run");
  for (ParamOp p : module_->getOps<ParamOp>()) {
    ArrayRef<int64_t> shape = p.getTensorType().getShape();
    params_.addSeeded(p.getSymName().str(),
                      std::vector<int64_t>(shape.begin(), shape.end()), seed);
  }
  return llvm::Error::success();
}
