//===- DynbPython.cpp - The `dynb` Python module over the embedded API ----===//
//
// pybind11 bindings of dynb::Engine (docs/python.md): the same handles as
// the C++ API under the same names, outputs as NumPy arrays over the
// Results' own memory, the GIL released while batches run or compile, and
// every dynb error raised as dynb.Error with its located message.
//
// Lifetimes: every Python object that points into C++ memory holds what
// owns that memory (an output array its Results, a parameter array its
// Engine, a Batch its Engine), and an Instance is checked against its
// Batch's round, so no misuse from Python reaches freed memory.
//
//===----------------------------------------------------------------------===//
#include "dynb/Driver/Commands.h"
#include "dynb/Driver/Outputs.h"
#include "dynb/Driver/Session.h"
#include "dynb/Engine/Engine.h"
#include "dynb/Engine/MicroBatcher.h"
#include "dynb/Engine/Version.h"

#include "llvm/Support/raw_ostream.h"

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <fmt/format.h>

#include <atomic>
#include <map>
#include <optional>
#include <set>
#include <type_traits>

namespace py = pybind11;
using namespace dynb;

namespace {

/// dynb.Error: what every failure of dynb itself raises.
PyObject *dynbError = nullptr;

[[noreturn]] void raiseDynbError(const std::string &message) {
  PyErr_SetString(dynbError, message.c_str());
  throw py::error_already_set();
}

template <typename T> T unwrap(llvm::Expected<T> value) {
  if (!value)
    raiseDynbError(llvm::toString(value.takeError()));
  return std::move(*value);
}

BatchingStrategy strategyNamed(const std::string &name) {
  std::optional<BatchingStrategy> s = parseBatchingStrategy(name);
  if (!s)
    throw py::value_error(
        fmt::format("unknown strategy '{}' (none, depth or agenda)", name));
  return *s;
}

/// A handle with the name it was resolved by, for repr and messages.
template <typename Handle> struct Named {
  Handle handle;
  std::string name;
};
using PyModule = Named<Module>;
using PyParam = Named<Param>;
using PyExperts = Named<Experts>;

/// A batch and the engine it builds for (`batch`), or a MicroBatcher's
/// batch that a builder adds to while it runs (`external`, no batch of its
/// own). `round` counts the runs and clears that emptied it: an Instance
/// of an earlier round is stale.
struct PyBatch {
  explicit PyBatch(std::shared_ptr<Engine> engine) : engine(std::move(engine)) {
    batch.emplace(*this->engine);
  }
  explicit PyBatch(Batch &external) : external(&external) {}
  std::shared_ptr<Engine> engine;
  std::optional<Batch> batch;
  uint64_t round = 0;
  /// Cleared when the builder returns.
  Batch *external = nullptr;
  Batch &target() { return external ? *external : *batch; }
};

/// One instance of a PyBatch (or of a MicroBatcher's batch while its
/// builder runs, then `alive` says whether the builder still runs).
struct PyInstance {
  std::shared_ptr<PyBatch> owner;
  uint64_t round;
  uint32_t index;
  std::shared_ptr<std::atomic<bool>> alive;

  Instance get() const {
    if (alive && !*alive)
      raiseDynbError(
          "this instance belonged to a MicroBatcher builder that has "
          "returned; build each instance inside its builder");
    if (!alive && owner->round != round)
      raiseDynbError(
          fmt::format("instance {} is stale: its batch was run or cleared "
                      "since it was added",
                      index));
    return owner->target().instance(index);
  }
  /// Adds one node through `op(instance)` and raises the misuse it
  /// recorded, at the call that made it. The instance stays failed: discard
  /// it or the batch's run raises it too.
  template <typename Op> auto apply(Op &&op) const {
    Instance x = get();
    Batch &b = owner->target();
    bool wasFailed = b.failed(index);
    auto raiseNew = [&] {
      if (!wasFailed && b.failed(index))
        raiseDynbError(b.errorOf(index).str());
    };
    if constexpr (std::is_void_v<decltype(op(x))>) {
      op(x);
      raiseNew();
    } else {
      auto result = op(x);
      raiseNew();
      return result;
    }
  }
};

/// An array over `data` that keeps `owner` alive.
py::array_t<float> viewOf(const float *data, std::vector<ssize_t> shape,
                          py::handle owner, bool writable) {
  py::array_t<float> a(std::move(shape), {}, data, owner);
  if (!writable)
    py::detail::array_proxy(a.ptr())->flags &=
        ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

/// Copies `tensors` (name -> array-like) over the parameters of `store`:
/// the same names as the model's parameters, each of its shape.
void assignParameters(rt::ParameterStore &store, const py::dict &tensors,
                      const std::string &what) {
  std::set<std::string> given;
  std::vector<std::pair<rt::ParamTensor *, py::array_t<float>>> checked;
  for (auto [key, value] : tensors) {
    std::string name = py::str(key);
    given.insert(name);
    rt::ParamTensor *t = store.findMutable(name);
    if (!t)
      raiseDynbError(
          fmt::format("{}: '{}' is not a parameter of the model (it has: {})",
                      what, name, fmt::join(store.names(), ", ")));
    auto array =
        py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(
            value);
    if (!array)
      raiseDynbError(
          fmt::format("{}: '{}' is not an array of numbers", what, name));
    std::vector<int64_t> shape(array.shape(), array.shape() + array.ndim());
    if (shape != t->shape)
      raiseDynbError(fmt::format(
          "{}: '{}' has shape [{}] but the model declares [{}]", what, name,
          fmt::join(shape, ", "), fmt::join(t->shape, ", ")));
    checked.emplace_back(t, std::move(array));
  }
  std::vector<std::string> missing;
  for (const std::string &name : store.names())
    if (!given.count(name))
      missing.push_back(name);
  if (!missing.empty())
    raiseDynbError(fmt::format("{}: no value for parameter{} {}", what,
                               missing.size() > 1 ? "s" : "",
                               fmt::join(missing, ", ")));
  // Nothing is written unless every tensor is right.
  for (auto &[t, array] : checked)
    std::copy(array.data(), array.data() + array.size(), t->data.begin());
}

py::dict parameterViews(rt::ParameterStore &store, py::handle owner) {
  py::dict out;
  for (const std::string &name : store.names()) {
    rt::ParamTensor *t = store.findMutable(name);
    out[py::str(name)] =
        viewOf(t->data.data(),
               std::vector<ssize_t>(t->shape.begin(), t->shape.end()), owner,
               /*writable=*/true);
  }
  return out;
}

/// dynb.ModelBuilder: a ModelBuilder whose module handles stay valid
/// while Python holds them (they hold the builder).
struct PyModelBuilder {
  explicit PyModelBuilder(std::string name)
      : builder(std::make_shared<ModelBuilder>(std::move(name))) {}
  std::shared_ptr<ModelBuilder> builder;
  /// The model as it is now, for an Engine.
  ModelBuilder copy() const { return *builder; }
};

struct PyModuleBuilder {
  std::shared_ptr<ModelBuilder> owner;
  ModuleBuilder module;
};

py::dict statsOf(const BatchStats &s) {
  py::dict d;
  d["instances"] = s.instances;
  d["nodes"] = s.nodes;
  d["launches"] = s.launches;
  d["rounds"] = s.rounds;
  d["schedule_seconds"] = s.scheduleSeconds;
  d["assemble_seconds"] = s.assembleSeconds;
  d["compile_seconds"] = s.compileSeconds;
  d["wait_seconds"] = s.waitSeconds;
  d["run_seconds"] = s.runSeconds;
  d["copy_seconds"] = s.copySeconds;
  return d;
}

std::shared_ptr<Engine> loadEngine(py::object model, py::object params,
                                   py::object seed, const std::string &strategy,
                                   unsigned threads, py::object cacheDir,
                                   bool noCache) {
  EngineOptions options;
  if (py::isinstance<PyModelBuilder>(model)) {
    // A copy: the Python builder may go on being edited.
    const PyModelBuilder &b = model.cast<const PyModelBuilder &>();
    options.model = std::make_shared<ModelBuilder>(b.copy());
  } else {
    options.modelPath =
        py::str(py::module_::import("os").attr("fspath")(model));
  }
  options.strategy = strategyNamed(strategy);
  options.threads = threads;
  bool paramsGiven = !params.is_none();
  if (paramsGiven && !seed.is_none())
    throw py::value_error(
        "give params or seed, not both (seed seeds every parameter)");
  std::optional<py::dict> tensors;
  if (paramsGiven) {
    if (py::isinstance<py::dict>(params))
      tensors = params.cast<py::dict>();
    else
      options.paramsPath =
          py::str(py::module_::import("os").attr("fspath")(params));
  }
  if (!seed.is_none())
    options.seed = seed.cast<uint64_t>();
  if (!cacheDir.is_none())
    options.kernelCache.directory =
        py::str(py::module_::import("os").attr("fspath")(cacheDir));
  options.kernelCache.persistent = !noCache;
  llvm::Expected<std::unique_ptr<Engine>> engine = [&] {
    py::gil_scoped_release release;
    return Engine::load(options);
  }();
  std::shared_ptr<Engine> shared(unwrap(std::move(engine)));
  if (tensors)
    assignParameters(shared->parameters(), *tensors, "params");
  return shared;
}

/// engine.run_file: the file's instances through dynbc's own reader and
/// runner, with the engine's parameters.
py::array_t<float> runFile(Engine &engine, const std::string &path,
                           int64_t batchSize, py::object strategy) {
  if (batchSize < 0)
    throw py::value_error("batch_size must be >= 0");
  std::string diagnostics;
  llvm::raw_string_ostream diag(diagnostics);
  StackedOutputs outputs;
  uint64_t instances = 0;
  std::string failure;
  {
    py::gil_scoped_release release;
    Session session(diag);
    InputOptions input;
    input.path = path;
    input.recordFrontEnd = true;
    input.kernelCache = engine.options().kernelCache;
    RunOptions run;
    run.strategy = strategy.is_none()
                       ? engine.options().strategy
                       : strategyNamed(strategy.cast<std::string>());
    run.batchSize = batchSize;
    run.repeat = 0;
    run.threads = engine.options().threads;
    if (failed(openInput(session, input))) {
      failure = "cannot read the instances";
    } else if (llvm::Error e = session.copyParams(engine.parameters(),
                                                  "the engine's model")) {
      // The file's model must be the engine's, parameter for parameter.
      failure = llvm::toString(std::move(e));
    } else {
      mlir::FailureOr<RunResult> r = session.run(run);
      if (failed(r)) {
        failure = "the run failed";
      } else {
        instances = r->instances;
        outputs = std::move(r->outputs);
      }
    }
  }
  if (!failure.empty()) {
    diag.flush();
    std::string message = diagnostics;
    while (!message.empty() && message.back() == '\n')
      message.pop_back();
    raiseDynbError(message.empty() ? failure : message);
  }
  int64_t width = 0;
  std::vector<float> rows = outputRows(outputs, instances, width);
  py::array_t<float> out(
      {static_cast<ssize_t>(instances), static_cast<ssize_t>(width)});
  std::copy(rows.begin(), rows.end(), out.mutable_data());
  return out;
}

/// A Python object whose last reference may go on a thread without the
/// GIL (a MicroBatcher's worker): it takes the GIL to let go.
struct GilSafeObject {
  py::object object;
  ~GilSafeObject() {
    if (object && Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      object = py::object();
    }
  }
};

/// One submission to a MicroBatcher: its future, and the exception its
/// Python builder raised (raised again by result()).
struct PyFuture {
  std::shared_ptr<std::future<llvm::Expected<InstanceOutputs>>> future;
  std::shared_ptr<GilSafeObject> error;
  bool taken = false;

  py::list result() {
    if (taken)
      raiseDynbError("this result was taken already");
    taken = true;
    llvm::Expected<InstanceOutputs> outputs = [&] {
      py::gil_scoped_release release;
      return future->get();
    }();
    if (error->object) {
      llvm::consumeError(outputs.takeError());
      PyErr_SetObject(
          reinterpret_cast<PyObject *>(Py_TYPE(error->object.ptr())),
          error->object.ptr());
      throw py::error_already_set();
    }
    InstanceOutputs done = unwrap(std::move(outputs));
    py::list list;
    for (std::vector<float> &o : done.outputs) {
      py::array_t<float> a(static_cast<ssize_t>(o.size()));
      std::copy(o.begin(), o.end(), a.mutable_data());
      list.append(std::move(a));
    }
    return list;
  }
};

struct PyMicroBatcher {
  std::shared_ptr<Engine> engine;
  std::unique_ptr<MicroBatcher> batcher;

  PyMicroBatcher(std::shared_ptr<Engine> e, size_t maxInstances,
                 double maxDelaySeconds)
      : engine(std::move(e)) {
    if (maxInstances == 0)
      throw py::value_error("max_instances must be at least 1");
    if (!(maxDelaySeconds >= 0))
      throw py::value_error("max_delay must be >= 0 seconds");
    MicroBatcherOptions o;
    o.maxInstances = maxInstances;
    o.maxDelay =
        std::chrono::microseconds(static_cast<int64_t>(maxDelaySeconds * 1e6));
    batcher = std::make_unique<MicroBatcher>(*engine, o);
  }
  ~PyMicroBatcher() { close(); }

  /// Runs what is queued and stops the worker. Without the GIL: the
  /// worker takes it to run the builders still queued.
  void close() {
    if (!batcher)
      return;
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      batcher.reset();
    } else {
      batcher.reset();
    }
  }

  PyFuture submit(py::function build) {
    if (!batcher)
      raiseDynbError("this MicroBatcher is closed");
    auto fn = std::make_shared<GilSafeObject>();
    fn->object = std::move(build);
    auto error = std::make_shared<GilSafeObject>();
    auto future = batcher->submit([fn, error](Instance &inst) {
      py::gil_scoped_acquire gil;
      auto owner = std::make_shared<PyBatch>(*inst.batch());
      auto alive = std::make_shared<std::atomic<bool>>(true);
      PyInstance handle{owner, 0, inst.index(), alive};
      try {
        fn->object(handle);
      } catch (py::error_already_set &e) {
        error->object = e.value();
      } catch (const std::exception &e) {
        error->object = py::reinterpret_steal<py::object>(
            PyObject_CallFunction(PyExc_RuntimeError, "s", e.what()));
      }
      // A failed builder's partial graph would run with nobody to read it.
      if (error->object)
        inst.batch()->discard(inst.index());
      *alive = false;
      owner->external = nullptr;
    });
    return PyFuture{std::make_shared<decltype(future)>(std::move(future)),
                    error};
  }
};

} // namespace

PYBIND11_MODULE(_dynb, m) {
  m.doc() = "dynb: batch and compile dynamic neural network graphs "
            "(the embedded Engine)";
  m.attr("__version__") = versionString();
  static py::exception<std::runtime_error> error(m, "Error",
                                                 PyExc_RuntimeError);
  dynbError = error.ptr();

  py::class_<Value>(m, "Value",
                    "A value one node of one instance computes (stale once "
                    "its batch has run)")
      .def_property_readonly("node", [](const Value &v) { return v.node; })
      .def_property_readonly("result", [](const Value &v) { return v.result; })
      .def("__repr__", [](const Value &v) {
        return fmt::format("<dynb.Value node {} result {}>", v.node, v.result);
      });

  py::class_<PyModule>(m, "Module", "A module of the engine's model")
      .def_property_readonly("name", [](const PyModule &h) { return h.name; })
      .def("__repr__", [](const PyModule &h) {
        return fmt::format("<dynb.Module '{}'>", h.name);
      });
  py::class_<PyParam>(m, "Param", "A parameter of the engine's model")
      .def_property_readonly("name", [](const PyParam &h) { return h.name; })
      .def("__repr__", [](const PyParam &h) {
        return fmt::format("<dynb.Param '{}'>", h.name);
      });
  py::class_<PyExperts>(m, "Experts",
                        "An expert module of the model, for dispatch")
      .def_property_readonly("name", [](const PyExperts &h) { return h.name; })
      .def("__repr__", [](const PyExperts &h) {
        return fmt::format("<dynb.Experts '{}'>", h.name);
      });

  py::class_<ModuleValue>(m, "ModuleValue",
                          "A value inside a module body being built")
      .def("__repr__", [](const ModuleValue &v) {
        return fmt::format("<dynb.ModuleValue node {} result {}>", v.node,
                           v.result);
      });
  py::class_<PyModuleBuilder> mb(
      m, "ModuleBuilder", "The body of one module of a ModelBuilder, op by op");
  mb.def(
        "arg",
        [](PyModuleBuilder &b, std::vector<int64_t> shape) {
          return b.module.arg(shape);
        },
        py::arg("shape"), "The module's next argument, of `shape`")
      .def(
          "linear",
          [](PyModuleBuilder &b, ModuleValue x, const std::string &weight,
             std::optional<std::string> bias) {
            std::optional<llvm::StringRef> bs;
            if (bias)
              bs = *bias;
            return b.module.linear(x, weight, bs);
          },
          py::arg("x"), py::arg("weight"), py::arg("bias") = py::none())
      .def(
          "concat",
          [](PyModuleBuilder &b, const std::vector<ModuleValue> &parts) {
            return b.module.concat(parts);
          },
          py::arg("parts"))
      .def(
          "slice",
          [](PyModuleBuilder &b, ModuleValue x, int64_t offset, int64_t size) {
            return b.module.slice(x, offset, size);
          },
          py::arg("x"), py::arg("offset"), py::arg("size"))
      .def(
          "output",
          [](PyModuleBuilder &b, ModuleValue v) { b.module.output(v); },
          py::arg("value"), "The module's next result");
#define DYNB_UNARY_OP(Name, mnemonic)                                          \
  mb.def(                                                                      \
      #mnemonic,                                                               \
      [](PyModuleBuilder &b, ModuleValue x) { return b.module.mnemonic(x); },  \
      py::arg("x"));
#define DYNB_BINARY_OP(Name, mnemonic)                                         \
  mb.def(                                                                      \
      #mnemonic,                                                               \
      [](PyModuleBuilder &b, ModuleValue x, ModuleValue y) {                   \
        return b.module.mnemonic(x, y);                                        \
      },                                                                       \
      py::arg("a"), py::arg("b"));
#include "dynb/Dialect/ElementwiseOps.def"

  py::class_<PyModelBuilder>(
      m, "ModelBuilder",
      "A model built in Python: parameters, and module bodies op by op; "
      "Engine.load takes it in place of a model file")
      .def(py::init<std::string>(), py::arg("name") = "model")
      .def(
          "param",
          [](PyModelBuilder &b, const std::string &name,
             std::vector<int64_t> shape) { b.builder->param(name, shape); },
          py::arg("name"), py::arg("shape"))
      .def(
          "module",
          [](PyModelBuilder &b, const std::string &name, int64_t experts) {
            return PyModuleBuilder{b.builder, b.builder->module(name, experts)};
          },
          py::arg("name"), py::arg("experts") = 0)
      .def_property_readonly(
          "name", [](const PyModelBuilder &b) { return b.builder->name(); });

  py::class_<PyInstance> inst(m, "Instance",
                              "One instance's graph, built node by node");
  inst.def_property_readonly("index",
                             [](const PyInstance &i) { return i.index; })
      .def(
          "embedding",
          [](const PyInstance &i, const PyParam &table, int64_t row) {
            return i.apply(
                [&](Instance &x) { return x.embedding(table.handle, row); });
          },
          py::arg("table"), py::arg("row"),
          "Row `row` of the 2-D parameter `table`")
      .def(
          "call",
          [](const PyInstance &i, const PyModule &module,
             const std::vector<Value> &args) {
            return i.apply([&](Instance &x) {
              llvm::SmallVector<Value, 2> r = x.call(module.handle, args);
              return std::vector<Value>(r.begin(), r.end());
            });
          },
          py::arg("module"), py::arg("args"),
          "A call of `module` on `args`; returns its results as a list")
      .def(
          "linear",
          [](const PyInstance &i, Value x, const PyParam &w,
             std::optional<PyParam> b) {
            std::optional<Param> bias;
            if (b)
              bias = b->handle;
            return i.apply(
                [&](Instance &in) { return in.linear(x, w.handle, bias); });
          },
          py::arg("x"), py::arg("weight"), py::arg("bias") = py::none(),
          "weight @ x (+ bias)")
      .def(
          "concat",
          [](const PyInstance &i, const std::vector<Value> &parts) {
            return i.apply([&](Instance &x) { return x.concat(parts); });
          },
          py::arg("parts"))
      .def(
          "slice",
          [](const PyInstance &i, Value v, int64_t offset, int64_t size) {
            return i.apply(
                [&](Instance &x) { return x.slice(v, offset, size); });
          },
          py::arg("x"), py::arg("offset"), py::arg("size"))
      .def(
          "softmax_xent",
          [](const PyInstance &i, Value logits, int64_t label) {
            return i.apply(
                [&](Instance &x) { return x.softmaxXent(logits, label); });
          },
          py::arg("logits"), py::arg("label"),
          "The cross-entropy loss of softmax(logits) against `label`")
      .def(
          "dispatch",
          [](const PyInstance &i, Value v, const PyParam &gate,
             const PyExperts &experts, int64_t k, std::optional<PyParam> noise,
             uint64_t noiseSeed) {
            std::optional<Param> n;
            if (noise)
              n = noise->handle;
            return i.apply([&](Instance &x) {
              return x.dispatch(v, gate.handle, experts.handle, k, n,
                                noiseSeed);
            });
          },
          py::arg("x"), py::arg("gate"), py::arg("experts"), py::arg("k"),
          py::arg("noise") = py::none(), py::arg("noise_seed") = 0,
          "A mixture-of-experts layer: the top `k` experts by `gate`")
      .def(
          "output",
          [](const PyInstance &i, Value v) {
            i.apply([&](Instance &x) { x.output(v); });
          },
          py::arg("value"), "Marks `value` as the instance's next output")
      .def(
          "width",
          [](const PyInstance &i, Value v) { return i.get().width(v); },
          py::arg("value"));
#define DYNB_UNARY_OP(Name, mnemonic)                                          \
  inst.def(                                                                    \
      #mnemonic,                                                               \
      [](const PyInstance &i, Value a) {                                       \
        return i.apply([&](Instance &x) { return x.mnemonic(a); });            \
      },                                                                       \
      py::arg("x"));
#define DYNB_BINARY_OP(Name, mnemonic)                                         \
  inst.def(                                                                    \
      #mnemonic,                                                               \
      [](const PyInstance &i, Value a, Value b) {                              \
        return i.apply([&](Instance &x) { return x.mnemonic(a, b); });         \
      },                                                                       \
      py::arg("a"), py::arg("b"));
#include "dynb/Dialect/ElementwiseOps.def"

  py::class_<PyBatch, std::shared_ptr<PyBatch>>(
      m, "Batch", "Instances built for one run of the engine")
      .def("add_instance",
           [](std::shared_ptr<PyBatch> b) {
             Instance i = b->batch->addInstance();
             return PyInstance{b, b->round, i.index(), nullptr};
           })
      .def_property_readonly(
          "num_instances",
          [](const PyBatch &b) { return b.batch->numInstances(); })
      .def_property_readonly(
          "num_nodes", [](const PyBatch &b) { return b.batch->numNodes(); })
      .def(
          "discard",
          [](PyBatch &b, const PyInstance &i) {
            if (i.owner.get() != &b || i.round != b.round)
              raiseDynbError(
                  "discard: the instance is not one of this batch's");
            b.batch->discard(i.index);
          },
          py::arg("instance"),
          "Leaves an instance (a failed one, say) out of the run")
      .def("clear", [](PyBatch &b) {
        b.batch->clear();
        ++b.round;
      });

  py::class_<Results, std::shared_ptr<Results>>(m, "Results",
                                                "The outputs of one run")
      .def_property_readonly("num_instances", &Results::numInstances)
      .def("num_outputs",
           [](const Results &r, size_t i) {
             if (i >= r.numInstances())
               throw py::index_error(
                   fmt::format("instance {} of {}", i, r.numInstances()));
             return r.numOutputs(i);
           })
      .def(
          "output",
          [](py::object self, size_t i, size_t k) {
            const Results &r = self.cast<const Results &>();
            if (i >= r.numInstances() || k >= r.numOutputs(i))
              throw py::index_error(fmt::format(
                  "output {} of instance {}: the run has {} instances{}", k, i,
                  r.numInstances(),
                  i < r.numInstances()
                      ? fmt::format(", that one {} outputs", r.numOutputs(i))
                      : ""));
            llvm::ArrayRef<float> d = r.output(i, k);
            // No copy: the array reads the Results, which it keeps alive.
            return viewOf(d.data(), {static_cast<ssize_t>(d.size())}, self,
                          /*writable=*/false);
          },
          py::arg("instance"), py::arg("k") = 0,
          "Output `k` of instance `instance` (a read-only view)")
      .def_property_readonly("loss",
                             [](const Results &r) -> py::object {
                               if (!r.hasLoss())
                                 return py::none();
                               return py::float_(r.loss());
                             })
      .def_property_readonly(
          "stats", [](const Results &r) { return statsOf(r.stats()); });

  py::class_<Engine, std::shared_ptr<Engine>>(
      m, "Engine",
      "A model loaded and compiled once, which runs batches of instances")
      .def_static("load", &loadEngine, py::arg("model"),
                  py::arg("params") = py::none(), py::arg("seed") = py::none(),
                  py::arg("strategy") = "agenda", py::arg("threads") = 0,
                  py::arg("cache_dir") = py::none(),
                  py::arg("no_cache") = false,
                  "Loads a model (a .mlir, .json or .jsonl path, or a "
                  "ModelBuilder); params: a "
                  "safetensors path or a dict of arrays (e.g. a PyTorch "
                  "state_dict's tensors as NumPy), or seed: every parameter "
                  "seeded (the default, seed 1)")
      .def(
          "param",
          [](const Engine &e, const std::string &name) {
            return PyParam{unwrap(e.param(name)), name};
          },
          py::arg("name"))
      .def(
          "module",
          [](const Engine &e, const std::string &name) {
            return PyModule{unwrap(e.module(name)), name};
          },
          py::arg("name"))
      .def(
          "experts",
          [](const Engine &e, const std::string &name) {
            return PyExperts{unwrap(e.experts(name)), name};
          },
          py::arg("name"))
      .def("batch",
           [](std::shared_ptr<Engine> e) {
             return std::make_shared<PyBatch>(std::move(e));
           })
      .def(
          "run",
          [](Engine &e, PyBatch &b, py::object strategy) {
            if (b.engine.get() != &e)
              raiseDynbError("run: the batch was built for another engine");
            std::optional<BatchingStrategy> s;
            if (!strategy.is_none())
              s = strategyNamed(strategy.cast<std::string>());
            llvm::Expected<Results> r = [&] {
              py::gil_scoped_release release;
              return s ? e.run(*b.batch, *s) : e.run(*b.batch);
            }();
            ++b.round;
            return std::make_shared<Results>(unwrap(std::move(r)));
          },
          py::arg("batch"), py::arg("strategy") = py::none(),
          "Runs every instance of the batch (which is emptied) and returns "
          "their outputs; the GIL is released meanwhile")
      .def(
          "gradient",
          [](std::shared_ptr<Engine> e, PyBatch &b, py::object strategy) {
            if (b.engine != e)
              raiseDynbError(
                  "gradient: the batch was built for another engine");
            std::optional<BatchingStrategy> s;
            if (!strategy.is_none())
              s = strategyNamed(strategy.cast<std::string>());
            llvm::Expected<Gradients> g = [&] {
              py::gil_scoped_release release;
              return s ? e->gradient(*b.batch, *s) : e->gradient(*b.batch);
            }();
            ++b.round;
            Gradients grads = unwrap(std::move(g));
            py::dict values;
            for (const std::string &name : grads.values.names()) {
              const rt::ParamTensor *t = grads.values.find(name);
              py::array_t<float> a(
                  std::vector<ssize_t>(t->shape.begin(), t->shape.end()));
              std::copy(t->data.begin(), t->data.end(), a.mutable_data());
              values[py::str(name)] = std::move(a);
            }
            py::dict out;
            out["loss"] = grads.loss;
            out["values"] = values;
            out["launches"] = grads.launches;
            out["lower_bound"] = grads.lowerBound;
            return out;
          },
          py::arg("batch"), py::arg("strategy") = py::none(),
          "The gradient of the batch's summed loss: a dict with loss, "
          "values (name -> array), launches and lower_bound")
      .def(
          "parameters",
          [](py::object self) {
            return parameterViews(self.cast<Engine &>().parameters(), self);
          },
          "The parameters every run reads, as writable arrays over the "
          "engine's own memory (not while a batch runs)")
      .def(
          "set_parameters",
          [](Engine &e, const py::dict &tensors) {
            assignParameters(e.parameters(), tensors, "set_parameters");
          },
          py::arg("tensors"),
          "Replaces every parameter's value (same names and shapes)")
      .def("run_file", &runFile, py::arg("path"), py::arg("batch_size") = 0,
           py::arg("strategy") = py::none(),
           "Runs a file's instances (.json, .jsonl; its model must be the "
           "engine's) as dynbc run does, in batches of batch_size (0: one), "
           "with the engine's parameters; returns [instances x width] as "
           "dynbc run --output writes it")
      .def_property_readonly("stats", [](const Engine &e) {
        EngineStats s = e.stats();
        py::dict d;
        d["modules_compiled"] = s.modulesCompiled;
        d["modules_loaded"] = s.modulesLoaded;
        d["op_kernels_compiled"] = s.opKernelsCompiled;
        d["jit_seconds"] = s.jitSeconds;
        return d;
      });

  py::class_<PyFuture>(m, "Future", "One MicroBatcher submission")
      .def("result", &PyFuture::result,
           "Waits (without the GIL) and returns the instance's outputs as a "
           "list of arrays, or raises its builder's or its run's error");

  py::class_<PyMicroBatcher>(
      m, "MicroBatcher",
      "Merges instances submitted from many threads into shared batches")
      .def(py::init<std::shared_ptr<Engine>, size_t, double>(),
           py::arg("engine"), py::arg("max_instances") = 64,
           py::arg("max_delay") = 0.002)
      .def("submit", &PyMicroBatcher::submit, py::arg("build"),
           "Queues one instance: build(instance) adds its nodes and outputs "
           "(it runs on the batcher's thread); returns a Future")
      .def(
          "run",
          [](PyMicroBatcher &mb, py::function build) {
            return mb.submit(std::move(build)).result();
          },
          py::arg("build"), "submit(build).result()")
      .def_property_readonly("batches_run",
                             [](const PyMicroBatcher &mb) {
                               return mb.batcher ? mb.batcher->batchesRun() : 0;
                             })
      .def("close", &PyMicroBatcher::close)
      .def("__enter__", [](py::object self) { return self; })
      .def("__exit__", [](PyMicroBatcher &mb, py::args) { mb.close(); });
}
