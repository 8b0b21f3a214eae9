//===- BatchedGradient.cpp - The batched backward pass of a loaded model --===//
#include "dynb/Driver/BatchedGradient.h"
#include "dynb/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include <algorithm>

using namespace mlir;
using namespace dynb;

FailureOr<std::unique_ptr<BatchedGradient>>
BatchedGradient::create(Session &session, const rt::ParameterStore &params,
                        unsigned threads, bool backward) {
  std::unique_ptr<BatchedGradient> g(new BatchedGradient(session));
  g->module_ = session.module().clone();
  if (backward) {
    PassManager pm(g->module_->getContext());
    // The module was verified on load; verifying every instance again after
    // each pass cost a fifth of a short training run (perf on `dynbc
    // train`). The schedules made from it are verified (addSchedulesTo), and
    // the passes' own tests verify what they write.
    pm.enableVerifier(false);
    pm.addPass(createDifferentiateModules());
    pm.addPass(createAppendBackward());
    if (failed(pm.run(*g->module_)))
      return failure();
  }
  for (InstanceOp inst : g->module_->getOps<InstanceOp>())
    g->instances_.push_back(inst);
  for (ParamOp p : g->module_->getOps<ParamOp>()) {
    RankedTensorType t = p.getTensorType();
    (void)g->gradients_.add(
        p.getSymName().str(),
        std::vector<int64_t>(t.getShape().begin(), t.getShape().end()),
        std::vector<float>(size_t(t.getNumElements()), 0.0f));
  }
  rt::ExecutorOptions opts;
  opts.numThreads = threads;
  g->executor_ = std::make_unique<rt::Executor>(params, opts);
  g->executor_->setGradients(&g->gradients_);
  return g;
}

FailureOr<std::vector<rt::Plan>>
BatchedGradient::plan(llvm::ArrayRef<size_t> order, int64_t batchSize,
                      BatchingStrategy strategy, RunResult &result) {
  // dynb-batch batches the module's instances in module order: put the
  // chosen ones last, in the order asked for, and batch only them.
  Block *body = module_->getBody();
  OwningOpRef<ModuleOp> chosen = ModuleOp::create(module_->getLoc());
  // Parameters and modules stay where they are; instances move to a
  // scratch module and back, so no instance is copied.
  std::vector<Operation *> moved;
  for (size_t i : order) {
    if (i >= instances_.size())
      return emitError(module_->getLoc())
             << "instance " << i << " is not in the model's "
             << instances_.size();
    moved.push_back(instances_[i]);
  }
  for (InstanceOp inst : instances_)
    inst->moveBefore(chosen->getBody(), chosen->getBody()->end());
  for (Operation *op : moved)
    op->moveBefore(body, body->end());
  RunOptions options;
  options.strategy = strategy;
  options.batchSize = batchSize;
  FailureOr<std::vector<rt::Plan>> plans =
      session_.buildPlans(*module_, options, result);
  // Back in file order, whatever happened.
  for (InstanceOp inst : instances_)
    inst->moveBefore(chosen->getBody(), chosen->getBody()->end());
  for (InstanceOp inst : instances_)
    inst->moveBefore(body, body->end());
  return plans;
}

void BatchedGradient::clear() {
  for (const std::string &name : gradients_.names()) {
    rt::ParamTensor *t = gradients_.findMutable(name);
    std::fill(t->data.begin(), t->data.end(), 0.0f);
  }
}

FailureOr<double> BatchedGradient::run(const rt::Plan &plan, bool accumulate) {
  if (rt::Status s = executor_->validate(plan))
    return emitError(module_->getLoc()) << "invalid plan: " << s.message();
  if (!accumulate)
    clear();
  if (rt::Status s = executor_->run(plan))
    return emitError(module_->getLoc()) << "run failed: " << s.message();
  for (const rt::Step &step : plan.steps) {
    if (step.kind() != rt::Step::Kind::SoftmaxXent ||
        step.softmaxXent().gradient)
      continue;
    const rt::SoftmaxXentStep &x = step.softmaxXent();
    for (int64_t r = 0; r < x.logits.rows; ++r) {
      const float *row =
          executor_->rowPointer(plan, x.logits.buffer, x.logits.row + r) +
          x.logits.col;
      int64_t best = std::max_element(row, row + x.logits.cols) - row;
      predictions_.correct += best == x.labels[size_t(r)];
      ++predictions_.total;
    }
  }
  return executor_->loss(plan);
}
