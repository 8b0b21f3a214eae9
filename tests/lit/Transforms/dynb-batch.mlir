// RUN: dynb-opt %s -dynb-batch=strategy=depth | FileCheck %s --check-prefix=DEPTH
// RUN: dynb-opt %s -dynb-batch=strategy=agenda | FileCheck %s --check-prefix=AGENDA
// RUN: dynb-opt %s -dynb-batch=strategy=none | FileCheck %s --check-prefix=NONE
// RUN: dynb-opt %s -dynb-batch="strategy=depth batch-size=1" | FileCheck %s --check-prefix=CHUNK

// Two trees: ((a b) c) and (d e). Leaves are cells on embeddings, internal
// nodes a cell on two children.
dynb.param @E : tensor<10x4xf32>
dynb.param @W : tensor<4x4xf32>
dynb.param @U : tensor<4x8xf32>

func.func @leaf(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = dynb.linear %x weight @W : tensor<4xf32> -> tensor<4xf32>
  %h = dynb.tanh %y : tensor<4xf32>
  return %h : tensor<4xf32>
}
func.func @node(%l: tensor<4xf32>, %r: tensor<4xf32>) -> tensor<4xf32> {
  %lr = dynb.concat %l, %r : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
  %y = dynb.linear %lr weight @U : tensor<8xf32> -> tensor<4xf32>
  %h = dynb.tanh %y : tensor<4xf32>
  return %h : tensor<4xf32>
}

dynb.instance {
  %a = dynb.embedding @E [1] : tensor<4xf32>
  %ha = dynb.call @leaf(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %b = dynb.embedding @E [2] : tensor<4xf32>
  %hb = dynb.call @leaf(%b) : (tensor<4xf32>) -> tensor<4xf32>
  %hab = dynb.call @node(%ha, %hb) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %c = dynb.embedding @E [3] : tensor<4xf32>
  %hc = dynb.call @leaf(%c) : (tensor<4xf32>) -> tensor<4xf32>
  %root = dynb.call @node(%hab, %hc) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  dynb.output %root : tensor<4xf32>
}
dynb.instance {
  %d = dynb.embedding @E [4] : tensor<4xf32>
  %hd = dynb.call @leaf(%d) : (tensor<4xf32>) -> tensor<4xf32>
  %e = dynb.embedding @E [5] : tensor<4xf32>
  %he = dynb.call @leaf(%e) : (tensor<4xf32>) -> tensor<4xf32>
  %root = dynb.call @node(%hd, %he) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  dynb.output %root : tensor<4xf32>
}

// Depth: every embedding, then every leaf, then the nodes at depth 2
// (a b) and (d e) together, then ((a b) c) alone.
// DEPTH-LABEL: dynb.schedule depth first_instance 0 num_instances 2 launches 4 lower_bound 4 nodes 13 {
// DEPTH: %[[X:.*]] = dynb.lookup @E [1, 2, 3, 4, 5] : tensor<5x4xf32>
// DEPTH: %[[L:.*]] = dynb.batched_call @leaf(%[[X]]) : (tensor<5x4xf32>) -> tensor<5x4xf32>
// DEPTH: %[[A:.*]] = dynb.gather %[[L]] rows [0, 0, 0, 3] : (tensor<5x4xf32>) -> tensor<2x4xf32>
// DEPTH: %[[B:.*]] = dynb.gather %[[L]] rows [0, 1, 0, 4] : (tensor<5x4xf32>) -> tensor<2x4xf32>
// DEPTH: %[[N1:.*]] = dynb.batched_call @node(%[[A]], %[[B]]) : (tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// DEPTH: %[[C:.*]] = dynb.gather %[[N1]] rows [0, 0] : (tensor<2x4xf32>) -> tensor<1x4xf32>
// DEPTH: %[[D:.*]] = dynb.gather %[[L]] rows [0, 2] : (tensor<5x4xf32>) -> tensor<1x4xf32>
// DEPTH: %[[N2:.*]] = dynb.batched_call @node(%[[C]], %[[D]])
// DEPTH: %[[OUT:.*]] = dynb.gather %[[N2]], %[[N1]] rows [0, 0, 1, 1] : (tensor<1x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
// DEPTH: dynb.yield %[[OUT]] : tensor<2x4xf32>
// DEPTH-NOT: dynb.instance

// AGENDA-LABEL: dynb.schedule agenda first_instance 0 num_instances 2 launches 4 lower_bound 4 nodes 13 {
// AGENDA: dynb.lookup @E [1, 2, 3, 4, 5]
// AGENDA: dynb.batched_call @leaf
// AGENDA-COUNT-2: dynb.batched_call @node
// AGENDA: dynb.yield

// None: one launch a node, 13 in all.
// NONE-LABEL: dynb.schedule none first_instance 0 num_instances 2 launches 13 lower_bound 4 nodes 13 {
// NONE-COUNT-5: dynb.lookup @E [{{[0-9]}}] : tensor<1x4xf32>

// One schedule an instance with batch-size=1.
// CHUNK-LABEL: dynb.schedule depth first_instance 0 num_instances 1 launches
// CHUNK-LABEL: dynb.schedule depth first_instance 1 num_instances 1 launches
