// RUN: dynb-opt %s -dynb-grad -dynb-backward | FileCheck %s
// Running the passes again changes nothing: the instance is marked done.
// RUN: dynb-opt %s -dynb-grad -dynb-backward -dynb-grad -dynb-backward | FileCheck %s

// A call of @cell becomes a call of @cell_fwd, which also returns what the
// adjoint reads; after the forward nodes come the backward ones, last node
// first: the loss seeds its logits' adjoint, the classifier's linear adds
// its parameter gradients and passes dh on, the cell's unread result c gets
// zeros, @cell_adj returns dx and its linear's dz, which a linear_grad
// reads beside the saved input, and the embedding's adjoint goes to its
// row of @E. The outputs stay as they were.

dynb.param @E : tensor<4x2xf32>
dynb.param @W : tensor<2x2xf32>
dynb.param @S : tensor<3x2xf32>
dynb.param @s : tensor<3xf32>
func.func @cell(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = dynb.linear %x weight @W : tensor<2xf32> -> tensor<2xf32>
  %h = dynb.tanh %y : tensor<2xf32>
  %c = dynb.sigmoid %y : tensor<2xf32>
  return %h, %c : tensor<2xf32>, tensor<2xf32>
}

// CHECK-LABEL: dynb.instance attributes {dynb.backward}
// CHECK-NEXT: %[[X:.*]] = dynb.embedding @E[1]
// CHECK-NEXT: %[[F:.*]]:{{[0-9]+}} = dynb.call @cell_fwd(%[[X]])
// CHECK-NEXT: %[[Z:.*]] = dynb.linear %[[F]]#0 weight @S bias @s
// CHECK-NEXT: dynb.softmax_xent %[[Z]] label 1
// CHECK-NEXT: %[[DZ:.*]] = dynb.softmax_xent_grad %[[Z]] label 1
// CHECK-NEXT: dynb.linear_grad %[[DZ]], %[[F]]#0 weight @S bias @s
// CHECK-NEXT: %[[DH:.*]] = dynb.linear_transpose %[[DZ]] weight @S
// CHECK-NEXT: %[[DC:.*]] = dynb.zeros : tensor<2xf32>
// CHECK-NEXT: %[[A:.*]]:2 = dynb.call @cell_adj(%[[DH]], %[[DC]], %[[F]]#2, %[[F]]#3, %[[F]]#4)
// CHECK-NEXT: dynb.linear_grad %[[A]]#1, %[[F]]#4 weight @W :
// CHECK-NEXT: dynb.embedding_grad %[[A]]#0 table @E[1]
// CHECK-NEXT: dynb.output %[[Z]]
dynb.instance {
  %x = dynb.embedding @E [1] : tensor<2xf32>
  %h, %c = dynb.call @cell(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  %z = dynb.linear %h weight @S bias @s : tensor<2xf32> -> tensor<3xf32>
  %l = dynb.softmax_xent %z label 1 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %z : tensor<3xf32>
}

// Ops outside modules get their adjoints in the instance: a value read
// twice (%a) sums its adjoints, a slice's is a pad, a product's the other
// factor times the incoming adjoint.
// CHECK-LABEL: dynb.instance attributes {dynb.backward}
// CHECK: %[[A2:.*]] = dynb.embedding @E[2]
// CHECK: %[[M:.*]] = dynb.mul %[[A2]], %[[A2]]
// CHECK: %[[P:.*]] = dynb.slice %[[M]][0, 1]
// CHECK: %[[Z2:.*]] = dynb.linear %[[P]] weight @T
// CHECK: %[[D:.*]] = dynb.softmax_xent_grad %[[Z2]] label 0
// CHECK: dynb.linear_grad %[[D]], %[[P]] weight @T :
// CHECK: %[[DP:.*]] = dynb.linear_transpose %[[D]] weight @T
// CHECK: %[[DM:.*]] = dynb.pad %[[DP]][0] : tensor<1xf32> -> tensor<2xf32>
// CHECK: %[[G1:.*]] = dynb.mul %[[DM]], %[[A2]]
// CHECK: %[[G2:.*]] = dynb.mul %[[DM]], %[[A2]]
// CHECK: %[[DA:.*]] = dynb.add %[[G1]], %[[G2]]
// CHECK: dynb.embedding_grad %[[DA]] table @E[2]
dynb.param @T : tensor<3x1xf32>
dynb.instance {
  %a = dynb.embedding @E [2] : tensor<2xf32>
  %m = dynb.mul %a, %a : tensor<2xf32>
  %p = dynb.slice %m [0, 1] : tensor<2xf32> -> tensor<1xf32>
  %z = dynb.linear %p weight @T : tensor<1xf32> -> tensor<3xf32>
  %l = dynb.softmax_xent %z label 0 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %z : tensor<3xf32>
}

// An instance without a loss is left alone (its calls included).
// CHECK-LABEL: dynb.instance {
// CHECK-NEXT: dynb.embedding @E[3]
// CHECK-NEXT: dynb.call @cell(
// CHECK-NEXT: dynb.linear
// CHECK-NEXT: dynb.output
dynb.instance {
  %x = dynb.embedding @E [3] : tensor<2xf32>
  %h, %c = dynb.call @cell(%x) : (tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>)
  %z = dynb.linear %h weight @S bias @s : tensor<2xf32> -> tensor<3xf32>
  dynb.output %z : tensor<3xf32>
}
