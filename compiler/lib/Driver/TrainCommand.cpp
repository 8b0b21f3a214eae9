//===- TrainCommand.cpp - dynbc train: epochs of optimizer steps ----------===//
//
// Each step takes the gradient of a batch's summed loss, from the batched
// backward pass (BatchedGradient: the step's instances with their backward
// nodes, planned by a strategy) or from the reference gradient (reverse
// mode in double, one instance at a time), and applies it with
// rt::Optimizer; after every epoch the dev loss and accuracy are measured
// the same way (forward only) and the parameters are written, through a
// temporary file and a rename, to --save.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/BatchedGradient.h"
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

template <typename T>
void shuffle(std::vector<T> &order, uint64_t seed, int64_t epoch) {
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

/// On a terminal, one line rewritten after every step: the epoch's steps,
/// instances a second and running loss. Elsewhere (a file, a pipe) nothing:
/// the epoch lines are the log.
class ProgressLine {
public:
  ProgressLine(size_t perStep, size_t instances)
      : perStep(perStep), instances(instances),
        live(llvm::outs().is_displayed()) {}

  void update(int64_t epoch, int64_t step, int64_t steps, double loss,
              double seconds) {
    if (!live)
      return;
    size_t done = std::min(instances, size_t(step) * perStep);
    constexpr int kWidth = 24;
    int filled = int(kWidth * step / std::max<int64_t>(steps, 1));
    std::string bar(size_t(filled), '#');
    bar.resize(kWidth, '.');
    llvm::outs() << fmt::format("\repoch {}: [{}] step {}/{}, {:.1f} "
                                "instances/s, running loss {:.5g} per "
                                "instance\x1b[K",
                                epoch, bar, step, steps,
                                double(done) / std::max(seconds, 1e-9),
                                loss / double(std::max<size_t>(done, 1)));
    llvm::outs().flush();
    shown = true;
  }
  void clear() {
    if (shown)
      llvm::outs() << "\r\x1b[K";
    shown = false;
  }

private:
  size_t perStep, instances;
  bool live;
  bool shown = false;
};

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

  llvm::Expected<std::optional<BatchingStrategy>> parsed =
      parseGradientStrategy(o.strategy, "train");
  if (!parsed)
    return commandError(llvm::toString(parsed.takeError()));
  std::optional<BatchingStrategy> strategy = *parsed;
  std::vector<InstanceOp> order = instancesOf(model);
  size_t perStep = o.batchSize == 0 ? order.size() : size_t(o.batchSize);
  std::optional<ReferenceGradient> grad;
  std::unique_ptr<BatchedGradient> batched, devBatched;
  std::vector<rt::Plan> devPlans;
  if (strategy) {
    FailureOr<std::unique_ptr<BatchedGradient>> b =
        BatchedGradient::create(session, params, o.threads);
    if (failed(b))
      return commandError("cannot differentiate " + o.inputPath +
                          "; nothing written");
    batched = std::move(*b);
    if (dev) {
      // The dev plans do not change from epoch to epoch: made once.
      FailureOr<std::unique_ptr<BatchedGradient>> d =
          BatchedGradient::create(*dev, params, o.threads, /*backward=*/false);
      if (failed(d))
        return commandError("cannot evaluate " + o.devPath);
      devBatched = std::move(*d);
      std::vector<size_t> all(devBatched->numInstances());
      std::iota(all.begin(), all.end(), size_t(0));
      RunResult counts;
      FailureOr<std::vector<rt::Plan>> plans =
          devBatched->plan(all, int64_t(perStep), *strategy, counts);
      if (failed(plans))
        return commandError("cannot plan " + o.devPath);
      devPlans = std::move(*plans);
    }
  } else {
    grad.emplace(model, params);
  }
  llvm::json::Array epochs;
  ProgressLine progress(perStep, order.size());
  llvm::outs() << fmt::format(
      "dynbc train: {}, {} instances, {} loss nodes, batch size {}, {} "
      "(lr {:g}), {}\n",
      o.inputPath, order.size(), lossNodes, perStep,
      o.optimizer.kind == rt::OptimizerOptions::Kind::Adam ? "adam" : "sgd",
      o.optimizer.effectiveLearningRate(),
      strategy ? "batched gradient (" + o.strategy + ")"
               : std::string("reference gradient"));
  for (int64_t epoch = firstEpoch; epoch <= o.epochs; ++epoch) {
    auto t0 = std::chrono::steady_clock::now();
    double trainLoss = 0;
    int64_t steps = 0;
    int64_t totalSteps = int64_t((order.size() + perStep - 1) / perStep);
    // Where the epoch's time went (batched: planning the steps, running
    // their forward and backward passes, the optimizer's updates).
    double planSeconds = 0, runSeconds = 0, updateSeconds = 0;
    int64_t correct = 0, total = 0;
    if (strategy) {
      // The file's order shuffled as the reference path shuffles it, so
      // both visit the instances alike.
      std::vector<size_t> index(order.size());
      std::iota(index.begin(), index.end(), size_t(0));
      shuffle(index, o.shuffleSeed, epoch);
      batched->clearPredictions();
      for (size_t first = 0; first < index.size(); first += perStep) {
        size_t n = std::min(index.size() - first, perStep);
        auto tp = std::chrono::steady_clock::now();
        RunResult counts;
        FailureOr<std::vector<rt::Plan>> plans =
            batched->plan(llvm::ArrayRef<size_t>(index).slice(first, n), 0,
                          *strategy, counts);
        if (failed(plans))
          return commandError(llvm::formatv(
              "epoch {0}, step {1}: cannot plan the step; nothing written",
              epoch, steps + 1));
        auto tr = std::chrono::steady_clock::now();
        planSeconds += std::chrono::duration<double>(tr - tp).count();
        FailureOr<double> l = batched->run(plans->front());
        if (failed(l))
          return commandError(llvm::formatv(
              "epoch {0}, step {1}: the run failed; nothing written", epoch,
              steps + 1));
        trainLoss += *l;
        auto tu = std::chrono::steady_clock::now();
        runSeconds += std::chrono::duration<double>(tu - tr).count();
        if (rt::Status s = optimizer.step(params, batched->gradients()))
          return commandError(llvm::formatv("epoch {0}, step {1}: {2}", epoch,
                                            steps + 1, s.message()));
        updateSeconds += secondsSince(tu);
        ++steps;
        progress.update(epoch, steps, totalSteps, trainLoss, secondsSince(t0));
      }
      correct = batched->predictions().correct;
      total = batched->predictions().total;
    } else {
      // From the file's order each time, so that an epoch's order depends
      // on the seed and its number alone, and a resumed run is the same
      // run.
      order = instancesOf(model);
      shuffle(order, o.shuffleSeed, epoch);
      grad->clearPredictions();
      for (size_t first = 0; first < order.size(); first += perStep) {
        grad->clearGradients();
        size_t last = std::min(order.size(), first + perStep);
        auto tr = std::chrono::steady_clock::now();
        for (size_t i = first; i < last; ++i) {
          FailureOr<double> l = grad->accumulate(order[i]);
          if (failed(l))
            return commandError("cannot differentiate " + o.inputPath +
                                "; nothing written");
          trainLoss += *l;
        }
        auto tu = std::chrono::steady_clock::now();
        runSeconds += std::chrono::duration<double>(tu - tr).count();
        if (rt::Status s = optimizer.step(params, grad->gradientsAsStore()))
          return commandError(llvm::formatv("epoch {0}, step {1}: {2}", epoch,
                                            steps + 1, s.message()));
        grad->setParams(params);
        updateSeconds += secondsSince(tu);
        ++steps;
        progress.update(epoch, steps, totalSteps, trainLoss, secondsSince(t0));
      }
      correct = grad->predictions().correct;
      total = grad->predictions().total;
    }
    double trainSeconds = secondsSince(t0);
    double trainAccuracy =
        double(correct) / double(std::max<int64_t>(total, 1));

    llvm::json::Object figures{
        {"epoch", epoch},
        {"steps", steps},
        {"train_loss", trainLoss},
        {"train_accuracy", trainAccuracy},
        {"train_seconds", trainSeconds},
        {"plan_seconds", planSeconds},
        {"run_seconds", runSeconds},
        {"update_seconds", updateSeconds},
        {"instances_per_second", double(order.size()) / trainSeconds}};
    std::string line = fmt::format(
        "epoch {}: train loss {:.6g} (accuracy {:.4f} while training), {} "
        "steps, {:.1f} instances/s",
        epoch, trainLoss, trainAccuracy, steps,
        double(order.size()) / trainSeconds);
    if (dev) {
      double devLoss = 0;
      double devAccuracy = 0;
      if (devBatched) {
        devBatched->clearPredictions();
        for (const rt::Plan &plan : devPlans) {
          FailureOr<double> l = devBatched->run(plan, /*accumulate=*/true);
          if (failed(l))
            return commandError("cannot evaluate " + o.devPath);
          devLoss += *l;
        }
        devAccuracy =
            double(devBatched->predictions().correct) /
            double(std::max<int64_t>(devBatched->predictions().total, 1));
      } else {
        ReferenceGradient devGrad(dev->module(), params);
        for (InstanceOp inst : dev->module().getOps<InstanceOp>()) {
          FailureOr<double> l = devGrad.loss(inst);
          if (failed(l))
            return commandError("cannot evaluate " + o.devPath);
          devLoss += *l;
        }
        devAccuracy = double(devGrad.predictions().correct) /
                      double(devGrad.predictions().total);
      }
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
    progress.clear();
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
        {"gradient", strategy ? "batched" : "reference"},
        {"strategy", o.strategy},
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
