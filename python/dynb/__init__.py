"""dynb: batch and compile dynamic neural network graphs.

The embedded Engine from Python (docs/python.md): load a model once, build
each instance's graph with typed handles, run many instances as one batch.
"""
from ._dynb import (Batch, Engine, Error, Experts, Future, Instance,
                    MicroBatcher, ModelBuilder, Module, ModuleBuilder,
                    ModuleValue, Param, Results, Value, __version__)

__all__ = ["Batch", "Engine", "Error", "Experts", "Future", "Instance",
           "MicroBatcher", "ModelBuilder", "Module", "ModuleBuilder",
           "ModuleValue", "Param", "Results", "Value",
           "__version__"]
