// RUN: dynb-opt %s -dynb-batch=strategy=depth | FileCheck %s --check-prefix=DEPTH
// RUN: dynb-opt %s -dynb-batch=strategy=none | FileCheck %s --check-prefix=NONE

// Three tokens through a 4-expert layer. The pass batches the dispatches of
// one signature like any per-instance op (one launch on a [3 x 4] value);
// grouping by expert is left to the runtime, which alone knows the gate's
// choice. Under 'none' every token is a dispatch of its own.
dynb.param @X : tensor<3x4xf32>
dynb.param @G : tensor<4x4xf32>
dynb.param @W : tensor<4x4x4xf32>
func.func @ffn(%x: tensor<4xf32>) -> tensor<4xf32> attributes {dynb.experts = 4 : i64} {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @X [0] : tensor<4xf32>
  %y = dynb.dispatch %x gate @G experts @ffn top 2 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @X [1] : tensor<4xf32>
  %y = dynb.dispatch %x gate @G experts @ffn top 2 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}
dynb.instance {
  %x = dynb.embedding @X [2] : tensor<4xf32>
  %y = dynb.dispatch %x gate @G experts @ffn top 2 : tensor<4xf32> -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}

// DEPTH-LABEL: dynb.schedule depth first_instance 0 num_instances 3 launches 2 lower_bound 2 nodes 6 {
// DEPTH: %[[X:.*]] = dynb.lookup @X [0, 1, 2] : tensor<3x4xf32>
// DEPTH: %[[Y:.*]] = dynb.dispatch %[[X]] gate @G experts @ffn top 2 : tensor<3x4xf32> -> tensor<3x4xf32>
// DEPTH: dynb.yield %[[Y]] : tensor<3x4xf32>

// NONE-LABEL: dynb.schedule none first_instance 0 num_instances 3 launches 6 lower_bound 2 nodes 6 {
// NONE-COUNT-3: dynb.dispatch %{{.*}} gate @G experts @ffn top 2 : tensor<1x4xf32> -> tensor<1x4xf32>
// NONE: dynb.yield
