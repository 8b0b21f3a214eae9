//===- Task.h - Builders that read computed values, still batched -*- C++
//-*-===//
//
// Some models must look at a value before they know the rest of their
// graph (a router choosing a module, a parser choosing shift or reduce).
// Written as a C++20 coroutine returning BuildTask, such a builder asks for
// a value with `co_await dynb::read(inst, v)`: its instance is suspended,
// and when every instance of the batch is suspended or finished, the
// engine runs the graph built so far as one batched run and resumes each
// with its values. So instances still share launches across the reads.
// This header needs C++20; the rest of the API needs C++17.
//
//===----------------------------------------------------------------------===//
#ifndef DYNB_ENGINE_TASK_H
#define DYNB_ENGINE_TASK_H

#include "dynb/Engine/Engine.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <coroutine>
#include <exception>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

namespace dynb {

/// The return type of a builder coroutine. Created suspended; the engine
/// resumes it.
class BuildTask {
public:
  struct promise_type {
    BuildTask get_return_object() {
      return BuildTask(
          std::coroutine_handle<promise_type>::from_promise(*this));
    }
    std::suspend_always initial_suspend() noexcept { return {}; }
    std::suspend_always final_suspend() noexcept { return {}; }
    void return_void() noexcept {}
    // dynb is built without exceptions.
    void unhandled_exception() noexcept { std::terminate(); }
  };

  BuildTask(BuildTask &&other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  BuildTask &operator=(BuildTask &&other) noexcept {
    std::swap(handle_, other.handle_);
    return *this;
  }
  ~BuildTask() {
    if (handle_)
      handle_.destroy();
  }
  bool done() const { return !handle_ || handle_.done(); }
  void resume() { handle_.resume(); }

private:
  explicit BuildTask(std::coroutine_handle<promise_type> h) : handle_(h) {}
  std::coroutine_handle<promise_type> handle_;
};

/// What `co_await read(inst, v)` waits on: v's values once computed. A
/// value that is not the instance's own (or follows an earlier misuse)
/// reads as empty, and the misuse fails the run.
class ValueRead {
public:
  ValueRead(Instance inst, Value v) : inst_(inst), value_(v) {}
  bool await_ready() const noexcept { return false; }
  void await_suspend(std::coroutine_handle<>) noexcept;
  std::vector<float> await_resume() { return std::move(values_); }

  Instance instance() const { return inst_; }
  Value value() const { return value_; }
  void setValues(llvm::ArrayRef<float> v) {
    values_.assign(v.begin(), v.end());
  }

private:
  Instance inst_;
  Value value_;
  std::vector<float> values_;
};

inline ValueRead read(Instance inst, Value v) { return ValueRead(inst, v); }

/// Builds one instance; may co_await read().
using TaskBuilder = std::function<BuildTask(Instance)>;

/// Runs one instance per builder in `batch` (empty beforehand): resumes
/// every builder until each waits on a read or finishes, runs the graph
/// built so far once for all the reads (Results::stats().rounds counts
/// these runs plus the final one), resumes them, and so on; finally runs
/// the whole graph and returns the outputs, one Results instance per
/// builder. Misuse fails it with the located message, as run() does.
llvm::Expected<Results> runTasks(Engine &engine, Batch &batch,
                                 llvm::ArrayRef<TaskBuilder> builders,
                                 std::optional<BatchingStrategy> strategy = {});

} // namespace dynb

#endif // DYNB_ENGINE_TASK_H
