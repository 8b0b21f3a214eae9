// RUN: dynb-opt %s | FileCheck %s
// RUN: dynb-opt %s -dynb-batch=strategy=depth | FileCheck %s --check-prefix=BATCH

// A loss node on each of two instances' logits: the labels differ, so they
// are per-row data of one launch, not part of the signature.
dynb.param @E : tensor<10x3xf32>

// CHECK-LABEL: dynb.instance
// CHECK: dynb.softmax_xent %{{.*}} label 2 : tensor<3xf32> -> tensor<1xf32>
dynb.instance {
  %z = dynb.embedding @E [1] : tensor<3xf32>
  %l = dynb.softmax_xent %z label 2 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %z : tensor<3xf32>
}
dynb.instance {
  %z = dynb.embedding @E [4] : tensor<3xf32>
  %l = dynb.softmax_xent %z label 0 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %z : tensor<3xf32>
}

// The loss has no use, and still is not dropped: it counts in the batch's
// loss. Both nodes are one launch with the labels in instance order.
// BATCH-LABEL: dynb.schedule
// BATCH: %[[Z:.*]] = dynb.lookup @E [1, 4] : tensor<2x3xf32>
// BATCH: dynb.batched_softmax_xent %[[Z]] labels [2, 0] : tensor<2x3xf32> -> tensor<2x1xf32>
// BATCH: dynb.yield
