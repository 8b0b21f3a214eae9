//===- GradCommand.cpp - dynbc grad: the gradient of the loss, saved ------===//
//
// The gradient of the sum of every loss node of every instance with respect
// to every parameter, computed by the reference gradient (reverse mode in
// double, one instance at a time) and written as F32 safetensors only once
// every instance succeeded, so a failure never leaves a file.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Import/Safetensors.h"
#include "dynb/Reference/ReferenceGradient.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

using namespace mlir;
using namespace dynb;

int dynb::runGradCommand(Session &session, const GradCommandOptions &o) {
  if (o.paramsPath.has_value() == o.seed.has_value())
    return commandError("grad needs exactly one of --params FILE.safetensors "
                        "and --seed N");
  if (o.outputPath.empty() || o.outputPath == "-")
    return commandError("grad writes a safetensors file: give -o "
                        "GRADS.safetensors");
  if (o.paramsPath) {
    if (llvm::Error e = session.loadParams(*o.paramsPath))
      return commandError(llvm::toString(std::move(e)));
  } else if (llvm::Error e = session.seedParams(*o.seed)) {
    return commandError(llvm::toString(std::move(e)));
  }

  ModuleOp module = session.module();
  int64_t lossNodes = 0, instances = 0;
  module.walk([&](SoftmaxXentOp) { ++lossNodes; });
  for (InstanceOp inst : module.getOps<InstanceOp>()) {
    (void)inst;
    ++instances;
  }
  if (lossNodes == 0)
    return commandError(o.inputPath +
                        " has no loss nodes (softmax_xent): there is nothing "
                        "to differentiate; no output written");

  ReferenceGradient grad(module, session.params());
  double loss = 0;
  for (InstanceOp inst : module.getOps<InstanceOp>()) {
    FailureOr<double> l = grad.accumulate(inst);
    if (failed(l))
      return commandError("cannot differentiate " + o.inputPath +
                          "; no output written");
    loss += *l;
  }

  std::vector<std::vector<float>> data;
  data.reserve(grad.gradients().size());
  std::vector<NamedTensor> tensors;
  for (const auto &[name, g] : grad.gradients()) {
    data.emplace_back(g.begin(), g.end());
    tensors.push_back({name, grad.shapeOf(name), &data.back()});
  }
  if (llvm::Error e = writeSafetensors(o.outputPath, tensors))
    return commandError(llvm::toString(std::move(e)));
  llvm::outs() << fmt::format(
      "dynbc grad: {}, {} instances, {} loss nodes (reference gradient: "
      "reverse mode in double, one instance at a time)\n"
      "loss {:.9g}\n"
      "wrote the gradients of {} parameters to {}\n",
      o.inputPath, instances, lossNodes, loss, tensors.size(), o.outputPath);
  return 0;
}
