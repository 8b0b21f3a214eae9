//===- MapRunner.h - Executes map steps with oneDNN (internal) ------------===//
#ifndef DYNB_RUNTIME_LIB_MAPRUNNER_H
#define DYNB_RUNTIME_LIB_MAPRUNNER_H

#include "StepRunners.h"
#include "dynb/Runtime/Status.h"

#include <memory>

namespace dynb::rt {

/// Runs map steps (Plan.h): convolutions and pooling as oneDNN primitives
/// made for the exact shape and batch and cached, layout changes as oneDNN
/// reorders, channel concatenation as a oneDNN concat. Convolution weights are
/// reordered once into the layout the primitive asks for and kept, keyed by the
/// parameter's address: parameters do not change during the executor's life.
class MapRunner {
public:
  MapRunner();
  ~MapRunner();
  MapRunner(const MapRunner &) = delete;
  MapRunner &operator=(const MapRunner &) = delete;

  Status run(const MapStep &step, const ResolvedBuffers &resolved);
  uint64_t primitivesCreated() const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Multiply-accumulates of a convolution step (0 for other map steps).
uint64_t mapStepMacs(const MapStep &step);

} // namespace dynb::rt

#endif // DYNB_RUNTIME_LIB_MAPRUNNER_H
