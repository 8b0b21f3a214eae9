//===- DynbOps.td - The dynb dialect's operations ----------*- tablegen -*-===//
#ifndef DYNB_OPS_TD
#define DYNB_OPS_TD

include "dynb/Dialect/DynbDialect.td"
include "dynb/Dialect/DynbEnums.td"
include "dynb/Dialect/DynbInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/BuiltinAttributes.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

def Dynb_Tensor : RankedTensorOf<[F32]>;

//===----------------------------------------------------------------------===//
// The model and the instances
//===----------------------------------------------------------------------===//

def Dynb_ParamOp : Dynb_Op<"param", [Symbol]> {
  let summary = "a named parameter tensor shared by every instance";
  let description = [{
    Declares a parameter; its values come from a safetensors file (by this
    name) or from a seed. Parameters are static-shaped f32 tensors of rank 1
    to 4; matrices are row-major and applied as `W x` (PyTorch's
    `nn.Linear.weight` layout). Rank 3 holds one matrix per expert
    (`[experts, rows, cols]`), read only by the linear ops of an expert
    module (see `dynb.dispatch`), or a table of rank-2 rows. Rank 4 holds
    convolution weights `[out, in, kh, kw]` (PyTorch's `nn.Conv2d.weight`)
    or a table of feature maps `[rows, channels, height, width]`.

    ```mlir
    dynb.param @W_iou : tensor<48x16xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttrOf<Dynb_Tensor>:$type);
  let assemblyFormat = "$sym_name `:` $type attr-dict";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    ::mlir::RankedTensorType getTensorType() {
      return ::llvm::cast<::mlir::RankedTensorType>(getType());
    }
  }];
}

def Dynb_InstanceOp : Dynb_Op<"instance", [IsolatedFromAbove, SingleBlock]> {
  let summary = "one instance's graph, on unbatched values";
  let description = [{
    The graph of one instance of the batch, in program order, ending with
    `dynb.output`. Instances are numbered by their order in the module.

    ```mlir
    dynb.instance {
      %x = dynb.embedding @E [3] : tensor<16xf32>
      %h, %c = dynb.call @leaf(%x) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
      dynb.output %h : tensor<16xf32>
    }
    ```
  }];
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "attr-dict-with-keyword $body";
  let hasVerifier = 1;
}

def Dynb_OutputOp : Dynb_Op<"output",
    [Pure, Terminator, HasParent<"InstanceOp">]> {
  let summary = "the outputs of an instance";
  let description = [{
    Ends an instance and names its outputs. Instances of one batch must have
    outputs of the same number and types: outputs are stacked, one row an
    instance.
  }];
  let arguments = (ins Variadic<Dynb_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

//===----------------------------------------------------------------------===//
// Per-instance operations (they also apply to batched values)
//===----------------------------------------------------------------------===//

def Dynb_EmbeddingOp : Dynb_Op<"embedding",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface,
       ["isPerRowAttribute", "buildLaunch", "describeSignature"]>]> {
  let summary = "row `index` of a parameter table";
  let description = [{
    Row `index` of the table's first dimension: a vector of a matrix, or a
    `C x H x W` feature map of a `[rows, C, H, W]` table.

    ```mlir
    %x = dynb.embedding @E [17] : tensor<16xf32>
    %m = dynb.embedding @features [3] : tensor<1024x14x14xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$table, I64Attr:$index);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$table `[` $index `]` attr-dict `:` type($result)";
}

def Dynb_LinearOp : Dynb_Op<"linear",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface, ["describeSignature"]>]> {
  let summary = "y = W x + b over the last dimension";
  let description = [{
    `weight` is a [N x K] parameter, `bias` an optional [N] one; the input's
    last dimension is K and the result's is N. Inside an expert module (a
    `func.func` with `dynb.experts = E`) the parameters are stacked per
    expert, `weight` [E x N x K] and `bias` [E x N], and the expert that
    `dynb.dispatch` runs reads its own slice.

    ```mlir
    %y = dynb.linear %x weight @W bias @b : tensor<16xf32> -> tensor<48xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input, FlatSymbolRefAttr:$weight,
                   OptionalAttr<FlatSymbolRefAttr>:$bias);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $input `weight` $weight (`bias` $bias^)? attr-dict `:` type($input) `->` type($result)
  }];
}

class Dynb_BinaryElementwiseOp<string mnemonic, string what>
    : Dynb_Op<mnemonic, [Pure, Commutative, SameOperandsAndResultType,
                       Elementwise, Dynb_BatchableOpInterface]> {
  let summary = "elementwise " # what;
  let arguments = (ins Dynb_Tensor:$lhs, Dynb_Tensor:$rhs);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def Dynb_AddOp : Dynb_BinaryElementwiseOp<"add", "sum">;
def Dynb_MulOp : Dynb_BinaryElementwiseOp<"mul", "(Hadamard) product">;

class Dynb_UnaryElementwiseOp<string mnemonic, string what>
    : Dynb_Op<mnemonic, [Pure, SameOperandsAndResultType, Elementwise,
                       Dynb_BatchableOpInterface]> {
  let summary = "elementwise " # what;
  let arguments = (ins Dynb_Tensor:$input);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def Dynb_SigmoidOp : Dynb_UnaryElementwiseOp<"sigmoid", "logistic function 1 / (1 + exp(-x))">;
def Dynb_TanhOp : Dynb_UnaryElementwiseOp<"tanh", "hyperbolic tangent">;
def Dynb_ReluOp : Dynb_UnaryElementwiseOp<"relu", "max(x, 0)">;
def Dynb_NegOp : Dynb_UnaryElementwiseOp<"neg", "negation -x">;

def Dynb_ConcatOp : Dynb_Op<"concat", [Pure, Dynb_BatchableOpInterface]> {
  let summary = "concatenation along the last dimension";
  let description = [{
    ```mlir
    %hh = dynb.concat %h1, %h2 : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
    ```
  }];
  let arguments = (ins Variadic<Dynb_Tensor>:$inputs);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

def Dynb_SliceOp : Dynb_Op<"slice", [Pure, Dynb_BatchableOpInterface]> {
  let summary = "`size` elements from `offset` along the last dimension";
  let description = [{
    ```mlir
    %i = dynb.slice %iou [0, 16] : tensor<48xf32> -> tensor<16xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input, I64Attr:$offset, I64Attr:$size);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $offset `,` $size `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dynb_CallOp : Dynb_Op<"call",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface,
       ["buildLaunch", "describeSignature"]>]> {
  let summary = "a call of a module on one instance's values";
  let description = [{
    The callee is a `func.func` whose body uses per-instance dynb ops. Calls
    of one module are merged by the batching pass into one
    `dynb.batched_call` that runs the body once at batch N.

    ```mlir
    %h, %c = dynb.call @leaf(%x) : (tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Dynb_Tensor>:$operands);
  let results = (outs Variadic<Dynb_Tensor>:$results);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
}

def Dynb_DispatchOp : Dynb_Op<"dispatch",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface, ["describeSignature"]>]> {
  let summary = "sparsely gated mixture of experts: a value-dependent choice "
                "among experts";
  let description = [{
    Scores `E` experts with the gate, `H(x) = W_gate x` (plus, with `noise`,
    `N(0,1) * softplus(W_noise x)`), keeps the `k` best (ties: the lower
    expert index first), and returns `sum_j softmax(kept)_j * expert_j(x)`.
    The experts are one module, `experts`, a `func.func` marked
    `dynb.experts = E` whose linear ops read parameters stacked per expert;
    expert `e` runs the body on slice `e` of each.

    Which experts run is decided by a value, so the batching pass batches
    the dispatch itself (same gate, experts, `k` and types) and the runtime
    batches what is inside it: it groups the rows by chosen expert (a
    counting sort), runs the module once per used expert on its rows, and
    sums the gate-weighted results back in row order. Like every
    per-instance op it applies to a leading batch dimension unchanged.

    The noise draw is a fixed function of `noise_seed`, the input row's
    bits and the expert, so it is the same under every strategy and in the
    reference interpreter (see docs/moe.md).

    ```mlir
    dynb.param @W_gate : tensor<8x16xf32>
    dynb.param @W1 : tensor<8x32x16xf32>
    func.func @ffn(%x: tensor<16xf32>) -> tensor<16xf32> attributes {dynb.experts = 8 : i64} { ... }
    %y = dynb.dispatch %x gate @W_gate experts @ffn top 2 : tensor<16xf32> -> tensor<16xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input, FlatSymbolRefAttr:$gate,
                   OptionalAttr<FlatSymbolRefAttr>:$noise,
                   FlatSymbolRefAttr:$experts, I64Attr:$k,
                   DefaultValuedAttr<I64Attr, "0">:$noise_seed);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $input `gate` $gate (`noise` $noise^)? `experts` $experts `top` $k attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Feature maps: per-instance values `C x H x W` (channels, height, width)
//===----------------------------------------------------------------------===//

def Dynb_Conv2DOp : Dynb_Op<"conv2d",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     Dynb_BatchableOpInterface]> {
  let summary = "2-D convolution with stride 1 over the last three dimensions";
  let description = [{
    `y[o, i, j] = bias[o] + sum_{c, u, v} weight[o, c, u, v] *
    x[c, i + u - padding, j + v - padding]` (zero outside the map): PyTorch's
    `nn.Conv2d(C, O, (kh, kw), padding=padding)` with its weight
    `[O, C, kh, kw]` and bias `[O]`. The input is `C x H x W` (or has
    leading batch dimensions); the result is `O x H' x W'` with
    `H' = H + 2 padding - kh + 1`.

    ```mlir
    %y = dynb.conv2d %x weight @W bias @b padding 1 : tensor<128x14x14xf32> -> tensor<128x14x14xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input, FlatSymbolRefAttr:$weight,
                   OptionalAttr<FlatSymbolRefAttr>:$bias,
                   DefaultValuedAttr<I64Attr, "0">:$padding);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $input `weight` $weight (`bias` $bias^)? `padding` $padding attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dynb_MaxPool2DOp : Dynb_Op<"maxpool2d", [Pure, Dynb_BatchableOpInterface]> {
  let summary = "2 x 2 max pooling with stride 2 over the last two dimensions";
  let description = [{
    PyTorch's `nn.MaxPool2d(2)`: `C x H x W` to `C x floor(H/2) x floor(W/2)`.

    ```mlir
    %p = dynb.maxpool2d %x : tensor<512x14x14xf32> -> tensor<512x7x7xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Dynb_FlattenOp : Dynb_Op<"flatten", [Pure, Dynb_BatchableOpInterface]> {
  let summary = "a `C x H x W` map as one vector, in C, H, W order";
  let description = [{
    Flattens the last three dimensions in row-major (C, H, W) order, as
    PyTorch's `x.view(N, -1)` does, so a dense layer after it takes
    PyTorch's weight unchanged.

    ```mlir
    %v = dynb.flatten %p : tensor<512x7x7xf32> -> tensor<25088xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def Dynb_ChannelConcatOp : Dynb_Op<"channel_concat",
    [Pure, Dynb_BatchableOpInterface]> {
  let summary = "concatenation of feature maps along the channels";
  let description = [{
    Maps `C_i x H x W` become one `(sum C_i) x H x W` map, the first
    input's channels first (the third dimension from the end).

    ```mlir
    %c = dynb.channel_concat %a, %b : (tensor<128x14x14xf32>, tensor<128x14x14xf32>) -> tensor<256x14x14xf32>
    ```
  }];
  let arguments = (ins Variadic<Dynb_Tensor>:$inputs);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Losses
//===----------------------------------------------------------------------===//

def Dynb_SoftmaxXentOp : Dynb_Op<"softmax_xent",
    [DeclareOpInterfaceMethods<Dynb_BatchableOpInterface,
       ["isPerRowAttribute", "buildLaunch"]>]> {
  let summary = "softmax cross-entropy of a vector of logits against a label";
  let description = [{
    A loss node: the result is `logsumexp(logits) - logits[label]`, one
    element. The label is per-instance data, as an embedding's row is, so
    nodes that differ only in their labels share a launch. The loss of a
    batch is the sum of every `softmax_xent` of its instances, whether or
    not an instance outputs it; that is why the op is not `Pure`: it may not
    be removed for having no uses, nor merged with another node of the same
    logits.

    ```mlir
    %loss = dynb.softmax_xent %logits label 3 : tensor<5xf32> -> tensor<1xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$logits, I64Attr:$label);
  let results = (outs Dynb_Tensor:$loss);
  let assemblyFormat = [{
    $logits `label` $label attr-dict `:` type($logits) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Dynb_SoftmaxXentGradOp : Dynb_Op<"softmax_xent_grad",
    [Pure, DeclareOpInterfaceMethods<Dynb_BatchableOpInterface,
       ["isPerRowAttribute", "buildLaunch"]>]> {
  let summary = "the logits' adjoint of a softmax cross-entropy loss";
  let description = [{
    `softmax(logits) - onehot(label)`: the gradient of `dynb.softmax_xent`
    with respect to its logits, for a loss adjoint of 1, where the backward
    pass of an instance starts. The label is per-instance data, as the
    loss's is, so the nodes of one width share a launch.

    ```mlir
    %dz = dynb.softmax_xent_grad %logits label 3 : tensor<5xf32> -> tensor<5xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$logits, I64Attr:$label);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $logits `label` $label attr-dict `:` type($logits) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Adjoint ops: what dynb-grad writes into adjoint modules
//===----------------------------------------------------------------------===//

class Dynb_DerivativeOp<string mnemonic, string what>
    : Dynb_Op<mnemonic, [Pure, SameOperandsAndResultType, Elementwise,
                       Dynb_BatchableOpInterface]> {
  let summary = "elementwise " # what;
  let description = [{
    Written by `dynb-grad` into adjoint modules, where it fuses into kernels
    as the other elementwise ops do, and by `dynb-backward` into instances,
    for the ops an instance runs outside modules. The first operand is the
    value the forward pass saved, the second the incoming adjoint.
  }];
  let arguments = (ins Dynb_Tensor:$saved, Dynb_Tensor:$adjoint);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$saved `,` $adjoint attr-dict `:` type($result)";
}

def Dynb_SigmoidGradOp : Dynb_DerivativeOp<"sigmoid_grad",
    "sigmoid's adjoint, adjoint * y * (1 - y), from its output y">;
def Dynb_TanhGradOp : Dynb_DerivativeOp<"tanh_grad",
    "tanh's adjoint, adjoint * (1 - y * y), from its output y">;
def Dynb_ReluGradOp : Dynb_DerivativeOp<"relu_grad",
    "relu's adjoint, the adjoint where its input x > 0 and 0 elsewhere">;

def Dynb_LinearTransposeOp : Dynb_Op<"linear_transpose",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface, ["describeSignature"]>]> {
  let summary = "a linear's input adjoint: dx = dy W over the last dimension";
  let description = [{
    `weight` is the [N x K] parameter of the `dynb.linear` whose adjoint
    this is: the input's last dimension is N and the result's is K.

    ```mlir
    %dx = dynb.linear_transpose %dy weight @W : tensor<48xf32> -> tensor<16xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input, FlatSymbolRefAttr:$weight);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $input `weight` $weight attr-dict `:` type($input) `->` type($result)
  }];
}

def Dynb_PadOp : Dynb_Op<"pad", [Pure, Dynb_BatchableOpInterface]> {
  let summary = "a slice's adjoint: the input at `offset` in zeros";
  let description = [{
    The result is as wide as the sliced value; its last dimension holds the
    input from `offset` on and zeros elsewhere.

    ```mlir
    %d = dynb.pad %di [16] : tensor<16xf32> -> tensor<48xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$input, I64Attr:$offset);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $input `[` $offset `]` attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Backward nodes: what dynb-backward appends to instances
//===----------------------------------------------------------------------===//

def Dynb_ZerosOp : Dynb_Op<"zeros", [Pure, Dynb_BatchableOpInterface]> {
  let summary = "a value of zeros";
  let description = [{
    The adjoint of a module's result that nothing downstream reads (a
    TreeLSTM root's cell state): the adjoint module still takes one.

    ```mlir
    %dc = dynb.zeros : tensor<16xf32>
    ```
  }];
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "attr-dict `:` type($result)";
}

def Dynb_LinearGradOp : Dynb_Op<"linear_grad",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface, ["describeSignature"]>]> {
  let summary = "adds a linear's contribution to its parameters' gradients";
  let description = [{
    For the `dynb.linear` of weight `W` [N x K] (and bias `b` [N]) whose
    input was `x` and whose output's adjoint is `dy`: adds the outer
    product `dy xᵀ` to `W`'s gradient and `dy` to `b`'s. It has no result:
    its effect is on the gradient buffers, which is why it is not `Pure`.
    The same op on batched values (a leading dimension of R rows) is its
    launch: one GEMM `dYᵀ X` over the R rows and a column sum of `dY`,
    accumulated into the gradients in row order.

    ```mlir
    dynb.linear_grad %dy, %x weight @W bias @b : tensor<48xf32>, tensor<16xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$adjoint, Dynb_Tensor:$input,
                   FlatSymbolRefAttr:$weight,
                   OptionalAttr<FlatSymbolRefAttr>:$bias);
  let assemblyFormat = [{
    $adjoint `,` $input `weight` $weight (`bias` $bias^)? attr-dict `:`
    type($adjoint) `,` type($input)
  }];
}

def Dynb_EmbeddingGradOp : Dynb_Op<"embedding_grad",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>,
     DeclareOpInterfaceMethods<Dynb_BatchableOpInterface,
       ["isPerRowAttribute", "buildLaunch", "describeSignature"]>]> {
  let summary = "adds an embedding's adjoint to its table row's gradient";
  let description = [{
    The backward node of `dynb.embedding @E [index]`: adds `dy` to row
    `index` of `E`'s gradient, and to no other row (the update is sparse).
    The row is per-instance data, as the embedding's is; the launch is a
    `dynb.batched_embedding_grad`.

    ```mlir
    dynb.embedding_grad %dy table @E [17] : tensor<16xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$adjoint, FlatSymbolRefAttr:$table,
                   I64Attr:$index);
  let assemblyFormat = [{
    $adjoint `table` $table `[` $index `]` attr-dict `:` type($adjoint)
  }];
}

//===----------------------------------------------------------------------===//
// The batched schedule produced by dynb-batch
//===----------------------------------------------------------------------===//

def Dynb_ScheduleOp : Dynb_Op<"schedule", [IsolatedFromAbove, SingleBlock]> {
  let summary = "a batch's launches, in order";
  let description = [{
    Produced by `dynb-batch` from the instances `first_instance` ..
    `first_instance + num_instances - 1` with the batching `strategy`. Each
    op other than `dynb.gather` and `dynb.yield` is one launch; values carry
    a leading batch dimension. `dynb.yield` returns, per output position,
    the instances' outputs stacked in instance order.

    The counts say how well the batching did: `launches` (the launch ops of
    the body), `nodes` (the per-instance ops they cover) and `lower_bound`,
    a number of launches no strategy can beat (for each signature, the most
    nodes of it on one dependency path, summed; dynb/Batching/Scheduler.h).
    The verifier holds them to `lower_bound <= launches <= nodes`.

    ```mlir
    dynb.schedule depth first_instance 0 num_instances 2 launches 2 lower_bound 2 nodes 4 {
      %x = dynb.lookup @E [3, 5] : tensor<2x16xf32>
      %h, %c = dynb.batched_call @leaf(%x) : (tensor<2x16xf32>) -> (tensor<2x16xf32>, tensor<2x16xf32>)
      dynb.yield %h : tensor<2x16xf32>
    }
    ```
  }];
  let arguments = (ins Dynb_ScheduleStrategy:$strategy,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$first_instance,
                   ConfinedAttr<I64Attr, [IntPositive]>:$num_instances,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$launches,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$lower_bound,
                   ConfinedAttr<I64Attr, [IntNonNegative]>:$nodes);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $strategy `first_instance` $first_instance `num_instances` $num_instances
    `launches` $launches `lower_bound` $lower_bound `nodes` $nodes
    attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
}

def Dynb_YieldOp : Dynb_Op<"yield", [Pure, Terminator, HasParent<"ScheduleOp">]> {
  let summary = "the stacked outputs of a schedule";
  let arguments = (ins Variadic<Dynb_Tensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let hasVerifier = 1;
}

def Dynb_LookupOp : Dynb_Op<"lookup",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "batched embedding: rows `indices` of a parameter table";
  let arguments = (ins FlatSymbolRefAttr:$table, DenseI64ArrayAttr:$indices);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = "$table $indices attr-dict `:` type($result)";
}

def Dynb_BatchedSoftmaxXentOp : Dynb_Op<"batched_softmax_xent"> {
  let summary = "softmax cross-entropy of each row of logits against its label";
  let description = [{
    The launch of `dynb.softmax_xent` nodes: row i of the result is the loss
    of logits row i against `labels[i]`, and every row counts in the batch's
    loss.

    ```mlir
    %l = dynb.batched_softmax_xent %z labels [3, 0] : tensor<2x5xf32> -> tensor<2x1xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$logits, DenseI64ArrayAttr:$labels);
  let results = (outs Dynb_Tensor:$loss);
  let assemblyFormat = [{
    $logits `labels` $labels attr-dict `:` type($logits) `->` type($loss)
  }];
  let hasVerifier = 1;
}

def Dynb_BatchedSoftmaxXentGradOp : Dynb_Op<"batched_softmax_xent_grad",
    [Pure]> {
  let summary = "the logits' adjoint of each row's softmax cross-entropy";
  let description = [{
    The launch of `dynb.softmax_xent_grad` nodes: row i of the result is
    softmax(logits row i) minus the one-hot of `labels[i]`.

    ```mlir
    %dz = dynb.batched_softmax_xent_grad %z labels [3, 0] : tensor<2x5xf32> -> tensor<2x5xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$logits, DenseI64ArrayAttr:$labels);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $logits `labels` $labels attr-dict `:` type($logits) `->` type($result)
  }];
  let hasVerifier = 1;
}

def Dynb_BatchedEmbeddingGradOp : Dynb_Op<"batched_embedding_grad",
    [DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "batched embedding adjoint: a scatter-add into table rows";
  let description = [{
    The launch of `dynb.embedding_grad` nodes: row i of the adjoint is
    added to row `rows[i]` of the table's gradient, in row order (a row
    read twice gets both adjoints, summed in that order).

    ```mlir
    dynb.batched_embedding_grad %d table @E rows [3, 5] : tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Dynb_Tensor:$adjoint, FlatSymbolRefAttr:$table,
                   DenseI64ArrayAttr:$rows);
  let assemblyFormat = [{
    $adjoint `table` $table `rows` $rows attr-dict `:` type($adjoint)
  }];
}

def Dynb_GatherOp : Dynb_Op<"gather", [Pure]> {
  let summary = "stack rows of earlier batched values";
  let description = [{
    `rows` holds (source, row) pairs: result row i is row `rows[2i+1]` of
    operand `rows[2i]`. A gather that takes every row of one source in order
    folds away; the buffer planner turns runs of consecutive rows into views.

    ```mlir
    %a = dynb.gather %h0, %h1 rows [0, 1, 1, 0] : (tensor<2x16xf32>, tensor<1x16xf32>) -> tensor<2x16xf32>
    ```
  }];
  let arguments = (ins Variadic<Dynb_Tensor>:$sources, DenseI64ArrayAttr:$rows);
  let results = (outs Dynb_Tensor:$result);
  let assemblyFormat = [{
    $sources `rows` $rows attr-dict `:` functional-type($sources, $result)
  }];
  let hasVerifier = 1;
  let hasFolder = 1;
}

def Dynb_BatchedCallOp : Dynb_Op<"batched_call",
    [Pure, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "a module run once on a batch of N instances' values";
  let description = [{
    Operand and result types are the callee's with a leading dimension N.

    ```mlir
    %h = dynb.batched_call @leaf(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee, Variadic<Dynb_Tensor>:$operands);
  let results = (outs Variadic<Dynb_Tensor>:$results);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict `:` functional-type($operands, results)
  }];
}

#endif // DYNB_OPS_TD
