//===- GradCommand.cpp - dynbc grad: the gradient of the loss, saved ------===//
//
// The gradient of the sum of every loss node of every instance with respect
// to every parameter: batched (the instances' backward nodes, planned by a
// strategy; BatchedGradient) or from the reference gradient (reverse mode
// in double, one instance at a time). Written as F32 safetensors only once
// every instance succeeded, so a failure never leaves a file.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/BatchedGradient.h"
#include "dynb/Driver/Commands.h"
#include "dynb/Import/Safetensors.h"
#include "dynb/Reference/ReferenceGradient.h"

#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <chrono>
#include <numeric>

using namespace mlir;
using namespace dynb;

llvm::Expected<std::optional<BatchingStrategy>>
dynb::parseGradientStrategy(llvm::StringRef name, llvm::StringRef command) {
  if (name == "reference")
    return std::nullopt;
  if (std::optional<BatchingStrategy> s = parseBatchingStrategy(name))
    return s;
  return llvm::createStringError(
      llvm::inconvertibleErrorCode(),
      "unknown --strategy '" + name + "' for " + command +
          " (expected none, depth, agenda or reference)");
}

int dynb::runGradCommand(Session &session, const GradCommandOptions &o) {
  if (o.paramsPath.has_value() == o.seed.has_value())
    return commandError("grad needs exactly one of --params FILE.safetensors "
                        "and --seed N");
  if (o.outputPath.empty() || o.outputPath == "-")
    return commandError("grad writes a safetensors file: give -o "
                        "GRADS.safetensors");
  llvm::Expected<std::optional<BatchingStrategy>> parsed =
      parseGradientStrategy(o.strategy, "grad");
  if (!parsed)
    return commandError(llvm::toString(parsed.takeError()));
  std::optional<BatchingStrategy> strategy = *parsed;
  if (o.batchSize < 0)
    return commandError("--batch-size must be >= 0");
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

  double loss = 0;
  rt::ParameterStore grads;
  std::string how;
  if (!strategy) {
    ReferenceGradient grad(module, session.params());
    for (InstanceOp inst : module.getOps<InstanceOp>()) {
      FailureOr<double> l = grad.accumulate(inst);
      if (failed(l))
        return commandError("cannot differentiate " + o.inputPath +
                            "; no output written");
      loss += *l;
    }
    grads = grad.gradientsAsStore();
    how = "reference gradient: reverse mode in double, one instance at a time";
  } else {
    auto t0 = std::chrono::steady_clock::now();
    FailureOr<std::unique_ptr<BatchedGradient>> batched =
        BatchedGradient::create(session, session.params(), o.threads);
    if (failed(batched))
      return commandError("cannot differentiate " + o.inputPath +
                          "; no output written");
    std::vector<size_t> order((*batched)->numInstances());
    std::iota(order.begin(), order.end(), size_t(0));
    RunResult counts;
    FailureOr<std::vector<rt::Plan>> plans =
        (*batched)->plan(order, o.batchSize, *strategy, counts);
    if (failed(plans))
      return commandError("cannot plan the backward pass of " + o.inputPath +
                          "; no output written");
    for (const rt::Plan &plan : *plans) {
      FailureOr<double> l = (*batched)->run(plan, /*accumulate=*/true);
      if (failed(l))
        return commandError("cannot differentiate " + o.inputPath +
                            "; no output written");
      loss += *l;
    }
    grads = (*batched)->gradients();
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count();
    how = fmt::format("batched, {}: {} launches (lower bound {}) for {} "
                      "forward and backward nodes in {} batches, {:.3f} s",
                      o.strategy, counts.launches, counts.lowerBound,
                      counts.nodes, plans->size(), seconds);
  }

  std::vector<NamedTensor> tensors;
  for (const std::string &name : grads.names()) {
    const rt::ParamTensor *t = grads.find(name);
    tensors.push_back({name, t->shape, &t->data});
  }
  if (llvm::Error e = writeSafetensors(o.outputPath, tensors))
    return commandError(llvm::toString(std::move(e)));
  llvm::outs() << fmt::format(
      "dynbc grad: {}, {} instances, {} loss nodes ({})\n"
      "loss {:.9g}\n"
      "wrote the gradients of {} parameters to {}\n",
      o.inputPath, instances, lossNodes, how, loss, tensors.size(),
      o.outputPath);
  return 0;
}
