//===- Passes.td - dynb's passes ---------------------------*- tablegen -*-===//
#ifndef DYNB_TRANSFORMS_PASSES_TD
#define DYNB_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def BatchInstances : Pass<"dynb-batch", "mlir::ModuleOp"> {
  let summary = "Merge the instances' nodes into batched launches";
  let description = [{
    Replaces the module's `dynb.instance` ops with `dynb.schedule` ops, one
    per `batch-size` consecutive instances (all of them when 0). Every node
    (an op of an instance) gets a signature (op or callee, attributes other
    than per-instance data such as an embedding's row, operand and result
    types); the batching algorithm (dynb/Batching/Scheduler.h) groups nodes
    of equal signature, and each group becomes one launch fed by
    `dynb.gather` ops. The schedule records its strategy, the number of
    launches, the lower bound on launches and the number of nodes it merged
    (`launches`, `lower_bound`, `nodes`; checked by the op's verifier).
  }];
  let options = [
    Option<"strategy", "strategy", "std::string", /*default=*/"\"agenda\"",
           "Scheduling strategy: none | depth | agenda">,
    Option<"batchSize", "batch-size", "int64_t", /*default=*/"0",
           "Instances per schedule (0: all instances in one schedule)">,
    Option<"keepInstances", "keep-instances", "bool", /*default=*/"false",
           "Leave the instances in place beside the schedules (a driver "
           "that runs several strategies on one module uses this instead of "
           "copying the module)">,
  ];
  // No pass statistics: with Debian's libMLIR (built without assertions)
  // an assertions build of dynb would disagree with it on their layout. The
  // counts are on each schedule (dynb.launches, dynb.lower_bound,
  // dynb.nodes).
  let dependentDialects = ["::dynb::DynbDialect"];
}

def LowerLaunches : Pass<"dynb-lower-launches", "mlir::ModuleOp"> {
  let summary = "Lower what each distinct launch runs to GEMM steps and "
                "fused linalg kernels";
  let description = [{
    Runs on a module after `dynb-batch`. Each distinct launch of its
    `dynb.schedule`s, in schedule order, is lowered as `dynbc compile
    --emit=linalg` lowers it, and its kernels module is appended to the
    module as a nested `builtin.module`: what the launch runs is named by
    `dynb.launch` (the callee of a `dynb.batched_call`, the expert module of
    a `dynb.dispatch`, or `op_<name>_0` for a batched per-instance op
    wrapped as a module of one op), and the steps the runtime runs (GEMMs,
    map steps, kernel calls, one line each, as `--emit=linalg` prints them)
    are the strings of `dynb.steps`. Lookups, gathers and the yield run no
    code of their own and are skipped; launches of one callee are lowered
    once, and so are batched ops of one name, attributes and per-instance
    operand shapes. The kernels module is what the JIT pipeline
    (`dynb-kernels-to-llvm`) and the GPU pipeline (`dynb-kernels-to-gpu`)
    take, nested: `builtin.module(builtin.module(dynb-kernels-to-llvm))`.

    Example: `%h = dynb.batched_call @leaf(%x)` with `@leaf` a linear and
    a tanh gives

    ```mlir
    module attributes {dynb.launch = "leaf", dynb.steps = [
        "module @leaf: 2 steps, 2 local buffers [N x cols] (4, 4)",
        "step 0: t0[:, 0:4] = gemm(arg0[:, 0:4], @W^T)   (oneDNN)",
        "step 1: call @leaf_k0(t0[:, 0:4], t1[:, 0:4])",
        "results: t1[:, 0:4]"]} {
      func.func @leaf_k0(%arg0: memref<?x4xf32, strided<[?, 1], offset: ?>>,
                         %arg1: memref<?x4xf32, strided<[?, 1], offset: ?>>)
          attributes {dynb.kernel = "fused tanh", llvm.emit_c_interface} {
        linalg.generic ... { math.tanh ... }
        return
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::cf::ControlFlowDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def DifferentiateModules : Pass<"dynb-grad", "mlir::ModuleOp"> {
  let summary = "Write each module's forward module, which also returns what "
                "its adjoint needs, and its adjoint module";
  let description = [{
    Reverse-mode differentiation of the dynb modules (`func.func`s). For a
    module `@f(x...) -> (y...)` it adds two modules of the dynb dialect, so
    that module lowering turns both into fused kernels and GEMMs as it does
    any module:

    - `@f_fwd(x...) -> (y..., s...)`: `@f`'s body, also returning the
      values `s` its adjoint reads (the saved activations: a linear's
      input, a product's factors, a sigmoid's or tanh's output, a relu's
      input), with `dynb.grad.forward_of = @f`.
    - `@f_adj(dy..., s...) -> (dx..., dz...)`: from the adjoints `dy` of the
      results and the saved values, the adjoints `dx` of the arguments that
      have one (their indices are `dynb.grad.args`), then, for every linear
      of `@f` that a result depends on, the adjoint `dz` of its output. The
      parameter gradients are left to whoever runs the adjoint over a batch
      of rows: a linear's weight gradient is the GEMM `dzᵀ s[input]` over
      those rows and its bias gradient the column sum of `dz`, which is
      what `dynb.grad.linears` lists (`weight`, `bias`, `input`: the index
      of the saved value). `dynb.grad.adjoint_of = @f`.

    Adjoints are computed in reverse order; where a value has several uses
    its adjoints are summed with `dynb.add`. A linear's input adjoint is
    `dynb.linear_transpose`; the adjoints of slices that tile a value
    exactly (a TreeLSTM's gates) are one `dynb.concat`, and other slices'
    are each a `dynb.pad`, summed; a concat's adjoints are slices of the
    incoming one, and the elementwise ops' are elementwise
    (`dynb.sigmoid_grad`, `dynb.tanh_grad`, `dynb.relu_grad`, `dynb.mul`,
    `dynb.neg`). A module that already has an adjoint is left alone, so
    the pass can run twice. Expert modules and modules with feature-map ops
    or calls are errors: they cannot be differentiated yet.
  }];
  let dependentDialects = ["::dynb::DynbDialect",
                           "::mlir::func::FuncDialect"];
}

def AppendBackward : Pass<"dynb-backward", "mlir::ModuleOp"> {
  let summary = "Append each instance's backward nodes, so that the batching "
                "pass batches the backward pass as it batches the forward";
  let description = [{
    Runs after `dynb-grad`. In every `dynb.instance` with a loss
    (`dynb.softmax_xent`), each call of a module `@f` becomes a call of
    `@f_fwd`, and after the forward nodes come the backward nodes of the
    gradient of the sum of the instance's losses, in reverse order:

    - a loss seeds its logits' adjoint with `dynb.softmax_xent_grad`;
    - a call of `@f_fwd` gets a call of `@f_adj` on its results' adjoints
      (`dynb.zeros` for a result nothing downstream read) and its saved
      values, and a `dynb.linear_grad` for every linear the adjoint lists
      in `dynb.grad.linears`, reading the adjoint module's `dz` and the
      forward module's saved input;
    - a `dynb.linear` gets a `dynb.linear_grad` and, for its input, a
      `dynb.linear_transpose`; a `dynb.embedding` a `dynb.embedding_grad`
      of its row; the elementwise ops, concat and slice the adjoints
      `dynb-grad` writes inside modules (`dynb.pad` for a slice).

    Where a value has several uses its adjoints are summed with `dynb.add`.
    The instance's outputs stay as they were. `dynb.linear_grad` and
    `dynb.embedding_grad` have no results: they add to the parameters'
    gradients, so every signature of them is one launch per schedule step
    like any node, and their launches are where the parameter gradients
    are reduced (a GEMM `dYᵀ X` over the launch's rows, a scatter-add of
    rows). Instances without a loss are left alone; an instance is marked
    `dynb.backward` once done, so the pass can run twice. An op on the path
    from a parameter to a loss that has no adjoint yet (`dynb.dispatch`,
    the feature-map ops) is an error naming the op and the instance.
  }];
  let dependentDialects = ["::dynb::DynbDialect"];
}

def ExpandMath : Pass<"dynb-expand-math", "mlir::ModuleOp"> {
  let summary = "Expand tanh and exp into polynomials over arith ops";
  let description = [{
    Applies MLIR's polynomial approximations of `math.tanh` and `math.exp`
    (and the other functions it approximates) greedily. A libm call is
    scalar and on the CPU costs more than the GEMMs of a batched TreeLSTM;
    the polynomials are plain arithmetic, which the loop vectoriser turns
    into vector code. On the GPU they need no libdevice: what remains is
    `math.fma`, `math.floor` and `math.absf`, which are single PTX
    instructions. Part of `dynb-kernels-to-llvm` and `dynb-kernels-to-gpu`.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def MapParallelLoopsToGpu
    : Pass<"dynb-map-parallel-to-gpu", "mlir::func::FuncOp"> {
  let summary = "Rewrite outermost scf.parallel loops into 1-D gpu.launch ops";
  let description = [{
    Each outermost `scf.parallel` (without reductions) becomes a
    `gpu.launch` of a 1-D grid of `block-size`-thread blocks, guarded by an
    `scf.if` so that an empty iteration space launches nothing. The thread
    with linear id t (block id x block size + thread id) runs the iteration
    whose row-major linear index is t, if there is one; the induction
    variables are recovered by division and remainder. Upstream's
    gpu-map-parallel-loops would put each loop dimension on its own grid
    dimension (one thread a block for the kernels' [batch x width] loops);
    flattening fills every block whatever the shape and keeps neighbouring
    threads on neighbouring columns. The bounds stay in the launch body, so
    after gpu-launch-sink-index-computations and gpu-kernel-outlining the
    kernel's arguments are the memrefs alone.
  }];
  let options = [
    Option<"blockSize", "block-size", "unsigned", /*default=*/"256",
           "Threads a block">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::scf::SCFDialect"];
}

def GpuModuleToNVVM : Pass<"dynb-gpu-module-to-nvvm", "mlir::gpu::GPUModuleOp"> {
  let summary = "Lower a gpu.module to the LLVM and NVVM dialects without "
                "libdevice";
  let description = [{
    The patterns of convert-gpu-to-nvvm (gpu, arith, cf and memref to LLVM
    and NVVM), except that the LLVM intrinsics llvm.intr.floor, fabs and fma
    stay legal: upstream turns them into libdevice calls (`__nv_floorf`),
    which leave unresolved functions in the PTX, while the NVPTX backend
    emits each as one instruction. Run convert-scf-to-cf and
    convert-math-to-llvm first: a math op still there is an error, since
    lowering it would need libdevice.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

#endif // DYNB_TRANSFORMS_PASSES_TD
