//===- TrainCommand.cpp - dynbc train: epochs of optimizer steps ----------===//
//
// Each step takes the gradient of a batch's summed loss from the reference
// gradient (reverse mode in double, one instance at a time: exact, not yet
// batched) and applies it with rt::Optimizer; after every epoch the dev
// loss and accuracy are measured the same way and the parameters are
// written, through a temporary file and a rename, to --save.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Import/Safetensors.h"
#include "dynb/Reference/ReferenceGradient.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <fmt/format.h>

#include <chrono>
#include <numeric>

using namespace mlir;
using namespace dynb;

namespace {

/// A checkpoint's count of the epochs it holds.
constexpr const char *kEpochTensor = "__train__/epochs";

/// splitmix64, so that an epoch's order is fixed by (seed, epoch) on every
/// standard library (std::shuffle's is not).
uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

void shuffle(std::vector<InstanceOp> &order, uint64_t seed, int64_t epoch) {
  uint64_t state = seed * 0x100000001b3ull + uint64_t(epoch);
  for (size_t i = order.size(); i > 1; --i)
    std::swap(order[i - 1], order[splitmix64(state) % i]);
}

std::vector<InstanceOp> instancesOf(ModuleOp module) {
  std::vector<InstanceOp> out;
  for (InstanceOp inst : module.getOps<InstanceOp>())
    out.push_back(inst);
  return out;
}

int64_t lossNodesOf(ModuleOp module) {
  int64_t n = 0;
  module.walk([&](SoftmaxXentOp) { ++n; });
  return n;
}

/// The gradients as F32 tensors an optimizer reads.
rt::ParameterStore toStore(const ReferenceGradient &grad) {
  rt::ParameterStore store;
  for (const auto &[name, g] : grad.gradients())
    (void)store.add(name, grad.shapeOf(name),
                    std::vector<float>(g.begin(), g.end()));
  return store;
}

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
      .count();
}

} // namespace

int dynb::runTrainCommand(Session &session, Session *dev,
                          const TrainCommandOptions &o) {
  if (int(o.paramsPath.has_value()) + int(o.seed.has_value()) +
          int(o.resumePath.has_value()) !=
      1)
    return commandError("train needs exactly one of --params "
                        "FILE.safetensors, --seed N and --resume "
                        "CHECKPOINT.safetensors");
  if (o.savePath.empty() || o.savePath == "-")
    return commandError("train writes its parameters after every epoch: "
                        "give --save OUT.safetensors");
  if (o.epochs < 1)
    return commandError("--epochs must be >= 1");
  if (o.batchSize < 0)
    return commandError("--batch-size must be >= 0");
  if (o.paramsPath || o.resumePath) {
    if (llvm::Error e =
            session.loadParams(o.paramsPath ? *o.paramsPath : *o.resumePath))
      return commandError(llvm::toString(std::move(e)));
  } else if (llvm::Error e = session.seedParams(*o.seed)) {
    return commandError(llvm::toString(std::move(e)));
  }
  rt::ParameterStore &params = session.mutableParams();
  rt::Optimizer optimizer(o.optimizer);
  int64_t firstEpoch = 1;
  if (o.resumePath) {
    const rt::ParamTensor *done = params.find(kEpochTensor);
    if (rt::Status s = optimizer.loadState(params))
      return commandError("cannot resume from " + *o.resumePath + ": " +
                          s.message());
    if (!done || done->data.size() != 1)
      return commandError("cannot resume from " + *o.resumePath +
                          ": it does not say how many epochs it holds");
    firstEpoch = int64_t(done->data[0]) + 1;
    params.remove(kEpochTensor);
    if (firstEpoch > o.epochs)
      return commandError(llvm::formatv(
          "{0} holds {1} epochs already; --epochs counts them, so ask for "
          "more",
          *o.resumePath, firstEpoch - 1));
  } else {
    // Optimizer state in a parameter file is a checkpoint's: starting from
    // its parameters leaves the state behind.
    std::vector<std::string> stale;
    for (const std::string &name : params.names())
      if (llvm::StringRef(name).starts_with(rt::Optimizer::kStatePrefix) ||
          name == kEpochTensor)
        stale.push_back(name);
    for (const std::string &name : stale)
      params.remove(name);
  }
  ModuleOp model = session.module();
  int64_t lossNodes = lossNodesOf(model);
  if (lossNodes == 0)
    return commandError(o.inputPath +
                        " has no loss nodes (softmax_xent): there is nothing "
                        "to train; nothing written");
  if (dev) {
    // The dev instances are evaluated with the training model's parameters.
    for (ParamOp p : dev->module().getOps<ParamOp>()) {
      const rt::ParamTensor *t = params.find(p.getSymName());
      llvm::ArrayRef<int64_t> shape = p.getTensorType().getShape();
      if (!t || llvm::ArrayRef<int64_t>(t->shape) != shape)
        return commandError(llvm::formatv(
            "{0} declares parameter '{1}' [{2:$[, ]}], which {3} does not "
            "declare with that shape",
            o.devPath, p.getSymName(),
            llvm::make_range(shape.begin(), shape.end()), o.inputPath));
    }
    if (lossNodesOf(dev->module()) == 0)
      return commandError(o.devPath + " has no loss nodes (softmax_xent): "
                                      "it cannot measure the dev loss");
  }

  std::vector<InstanceOp> order = instancesOf(model);
  size_t perStep = o.batchSize == 0 ? order.size() : size_t(o.batchSize);
  ReferenceGradient grad(model, params);
  llvm::json::Array epochs;
  llvm::outs() << fmt::format(
      "dynbc train: {}, {} instances, {} loss nodes, batch size {}, {} "
      "(lr {:g}), reference gradient\n",
      o.inputPath, order.size(), lossNodes, perStep,
      o.optimizer.kind == rt::OptimizerOptions::Kind::Adam ? "adam" : "sgd",
      o.optimizer.effectiveLearningRate());
  for (int64_t epoch = firstEpoch; epoch <= o.epochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    // From the file's order each time, so that an epoch's order depends on
    // the seed and its number alone, and a resumed run is the same run.
    order = instancesOf(model);
    shuffle(order, o.shuffleSeed, epoch);
    double trainLoss = 0;
    int64_t steps = 0;
    grad.clearPredictions();
    for (size_t first = 0; first < order.size(); first += perStep) {
      grad.clearGradients();
      size_t last = std::min(order.size(), first + perStep);
      for (size_t i = first; i < last; ++i) {
        FailureOr<double> l = grad.accumulate(order[i]);
        if (failed(l))
          return commandError("cannot differentiate " + o.inputPath +
                              "; nothing written");
        trainLoss += *l;
      }
      if (rt::Status s = optimizer.step(params, toStore(grad)))
        return commandError(llvm::formatv("epoch {0}, step {1}: {2}", epoch,
                                          steps + 1, s.message()));
      grad.setParams(params);
      ++steps;
    }
    double trainSeconds = secondsSince(t0);
    double trainAccuracy =
        double(grad.predictions().correct) /
        double(std::max<int64_t>(grad.predictions().total, 1));

    llvm::json::Object figures{
        {"epoch", epoch},
        {"steps", steps},
        {"train_loss", trainLoss},
        {"train_accuracy", trainAccuracy},
        {"train_seconds", trainSeconds},
        {"instances_per_second", double(order.size()) / trainSeconds}};
    std::string line = fmt::format(
        "epoch {}: train loss {:.6g} (accuracy {:.4f} while training), {} "
        "steps, {:.1f} instances/s",
        epoch, trainLoss, trainAccuracy, steps,
        double(order.size()) / trainSeconds);
    if (dev) {
      ReferenceGradient devGrad(dev->module(), params);
      double devLoss = 0;
      for (InstanceOp inst : dev->module().getOps<InstanceOp>()) {
        FailureOr<double> l = devGrad.loss(inst);
        if (failed(l))
          return commandError("cannot evaluate " + o.devPath);
        devLoss += *l;
      }
      double devAccuracy = double(devGrad.predictions().correct) /
                           double(devGrad.predictions().total);
      figures["dev_loss"] = devLoss;
      figures["dev_accuracy"] = devAccuracy;
      line += fmt::format("; dev loss {:.6g}, accuracy {:.4f}", devLoss,
                          devAccuracy);
    }

    // The checkpoint: every parameter under its own name, then what
    // --resume needs: the optimizer's state and the epochs done.
    rt::ParameterStore resumable;
    optimizer.saveState(resumable);
    (void)resumable.add(kEpochTensor, {1}, {float(epoch)});
    std::vector<NamedTensor> tensors;
    for (const rt::ParameterStore *store : {&params, &resumable})
      for (const std::string &name : store->names()) {
        const rt::ParamTensor *t = store->find(name);
        tensors.push_back({name, t->shape, &t->data});
      }
    if (llvm::Error e = writeSafetensors(o.savePath, tensors))
      return commandError(llvm::toString(std::move(e)));
    llvm::outs() << line << "; saved " << o.savePath << "\n";
    llvm::outs().flush();
    epochs.push_back(std::move(figures));
  }

  if (!o.reportPath.empty()) {
    llvm::json::Object report{
        {"input", o.inputPath},
        {"dev", o.devPath.empty() ? llvm::json::Value(nullptr)
                                  : llvm::json::Value(o.devPath)},
        {"instances", int64_t(order.size())},
        {"batch_size", int64_t(perStep)},
        {"optimizer",
         o.optimizer.kind == rt::OptimizerOptions::Kind::Adam ? "adam" : "sgd"},
        {"learning_rate", o.optimizer.effectiveLearningRate()},
        {"gradient", "reference"},
        {"epochs", std::move(epochs)}};
    if (llvm::Error e = llvm::writeToOutput(
            o.reportPath, [&](llvm::raw_ostream &os) -> llvm::Error {
              os << llvm::formatv("{0:2}", llvm::json::Value(std::move(report)))
                 << "\n";
              return llvm::Error::success();
            }))
      return commandError(llvm::toString(std::move(e)));
  }
  return 0;
}
