// RUN: dynb-opt %s | FileCheck %s
// RUN: dynb-opt %s -dynb-batch=strategy=depth | FileCheck %s --check-prefix=BATCH

// Where an instance's backward pass starts: the logits' adjoint of its loss,
// softmax minus the one-hot label. The labels are per-row data of one launch.
dynb.param @E : tensor<10x3xf32>

// CHECK-LABEL: dynb.instance
// CHECK: dynb.softmax_xent_grad %{{.*}} label 2 : tensor<3xf32> -> tensor<3xf32>
dynb.instance {
  %z = dynb.embedding @E [1] : tensor<3xf32>
  %d = dynb.softmax_xent_grad %z label 2 : tensor<3xf32> -> tensor<3xf32>
  dynb.output %d : tensor<3xf32>
}
dynb.instance {
  %z = dynb.embedding @E [4] : tensor<3xf32>
  %d = dynb.softmax_xent_grad %z label 0 : tensor<3xf32> -> tensor<3xf32>
  dynb.output %d : tensor<3xf32>
}

// BATCH-LABEL: dynb.schedule
// BATCH: %[[Z:.*]] = dynb.lookup @E [1, 4] : tensor<2x3xf32>
// BATCH: dynb.batched_softmax_xent_grad %[[Z]] labels [2, 0] : tensor<2x3xf32> -> tensor<2x3xf32>
