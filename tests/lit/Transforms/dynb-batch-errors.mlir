// RUN: dynb-opt %s -split-input-file -verify-diagnostics -dynb-batch
// RUN: not dynb-opt %s -dynb-batch=strategy=fast 2>&1 | FileCheck %s --check-prefix=STRATEGY
// STRATEGY: unknown batching strategy 'fast' (expected none, depth or agenda)

dynb.param @E : tensor<10x4xf32>
dynb.param @F : tensor<10x8xf32>
// expected-note @+1 {{instance 0 is here}}
dynb.instance {
  %x = dynb.embedding @E [1] : tensor<4xf32>
  dynb.output %x : tensor<4xf32>
}
// expected-error @+1 {{(instance 1) has outputs of other types than instance 0}}
dynb.instance {
  %x = dynb.embedding @F [1] : tensor<8xf32>
  dynb.output %x : tensor<8xf32>
}

