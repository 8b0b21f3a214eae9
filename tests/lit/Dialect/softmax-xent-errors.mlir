// RUN: dynb-opt %s -split-input-file -verify-diagnostics

dynb.param @E : tensor<10x3xf32>
dynb.instance {
  %z = dynb.embedding @E [1] : tensor<3xf32>
  // expected-error @+1 {{label 3 is not a class of 3 logits}}
  %l = dynb.softmax_xent %z label 3 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %z : tensor<3xf32>
}

// -----

dynb.param @E : tensor<10x3xf32>
dynb.instance {
  %z = dynb.embedding @E [1] : tensor<3xf32>
  // expected-error @+1 {{result must be [1], got [3]}}
  %l = dynb.softmax_xent %z label 0 : tensor<3xf32> -> tensor<3xf32>
  dynb.output %z : tensor<3xf32>
}

// -----

func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{logits must be a non-empty vector, got [2, 3]}}
  %l = dynb.softmax_xent %x label 0 : tensor<2x3xf32> -> tensor<1xf32>
  return %x : tensor<2x3xf32>
}

// -----

func.func @f(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{1 labels for 2 rows}}
  %l = dynb.batched_softmax_xent %x labels [0] : tensor<2x3xf32> -> tensor<2x1xf32>
  return %x : tensor<2x3xf32>
}

// -----

dynb.param @E : tensor<10x3xf32>
dynb.instance {
  %z = dynb.embedding @E [1] : tensor<3xf32>
  // expected-error @+1 {{label 5 is not a class of 3 logits}}
  %d = dynb.softmax_xent_grad %z label 5 : tensor<3xf32> -> tensor<3xf32>
  dynb.output %z : tensor<3xf32>
}

// -----

dynb.param @E : tensor<10x3xf32>
dynb.instance {
  %z = dynb.embedding @E [1] : tensor<3xf32>
  // expected-error @+1 {{result must be the logits' type [3], got [1]}}
  %d = dynb.softmax_xent_grad %z label 1 : tensor<3xf32> -> tensor<1xf32>
  dynb.output %z : tensor<3xf32>
}

// -----

func.func @f(%z: tensor<2x3xf32>) -> tensor<2x3xf32> {
  // expected-error @+1 {{1 labels for 2 rows}}
  %d = dynb.batched_softmax_xent_grad %z labels [0] : tensor<2x3xf32> -> tensor<2x3xf32>
  return %d : tensor<2x3xf32>
}
