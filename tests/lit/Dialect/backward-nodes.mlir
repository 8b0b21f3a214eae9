// RUN: dynb-opt %s | FileCheck %s
// RUN: dynb-opt %s -dynb-batch=strategy=depth | FileCheck %s --check-prefix=BATCH

// The nodes dynb-backward appends: parameter-gradient nodes of one weight
// or table share a launch (an embedding's row is per-row data, as the
// embedding's own), and so do zeros of one shape. Gradient nodes have no
// results and are kept though nothing reads them.
dynb.param @E : tensor<10x3xf32>
dynb.param @W : tensor<2x3xf32>
dynb.param @b : tensor<2xf32>

// CHECK-LABEL: dynb.instance
// CHECK: dynb.linear_grad %{{.*}}, %{{.*}} weight @W bias @b : tensor<2xf32>, tensor<3xf32>
// CHECK: dynb.embedding_grad %{{.*}} table @E[1] : tensor<3xf32>
// CHECK: dynb.zeros : tensor<2xf32>
dynb.instance {
  %x = dynb.embedding @E [1] : tensor<3xf32>
  %d = dynb.zeros : tensor<2xf32>
  dynb.linear_grad %d, %x weight @W bias @b : tensor<2xf32>, tensor<3xf32>
  dynb.embedding_grad %x table @E [1] : tensor<3xf32>
  dynb.output %x : tensor<3xf32>
}
dynb.instance {
  %x = dynb.embedding @E [4] : tensor<3xf32>
  %d = dynb.zeros : tensor<2xf32>
  dynb.linear_grad %d, %x weight @W bias @b : tensor<2xf32>, tensor<3xf32>
  dynb.embedding_grad %x table @E [4] : tensor<3xf32>
  dynb.output %x : tensor<3xf32>
}

// BATCH-LABEL: dynb.schedule depth first_instance 0 num_instances 2 launches 4 lower_bound 4 nodes 8
// BATCH-DAG: %[[X:.*]] = dynb.lookup @E [1, 4] : tensor<2x3xf32>
// BATCH-DAG: %[[D:.*]] = dynb.zeros : tensor<2x2xf32>
// BATCH-DAG: dynb.linear_grad %[[D]], %[[X]] weight @W bias @b : tensor<2x2xf32>, tensor<2x3xf32>
// BATCH-DAG: dynb.batched_embedding_grad %[[X]] table @E rows [1, 4] : tensor<2x3xf32>
