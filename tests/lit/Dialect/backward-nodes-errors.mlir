// RUN: dynb-opt %s -split-input-file -verify-diagnostics

dynb.param @W : tensor<2x3xf32>
dynb.instance {
  %d = dynb.zeros : tensor<4xf32>
  %x = dynb.zeros : tensor<3xf32>
  // expected-error @+1 {{'dynb.linear_grad' op adjoint [4] does not end in 2, the rows of @W [2, 3]}}
  dynb.linear_grad %d, %x weight @W : tensor<4xf32>, tensor<3xf32>
  dynb.output %x : tensor<3xf32>
}

// -----

dynb.param @W : tensor<2x3xf32>
dynb.instance {
  %d = dynb.zeros : tensor<2xf32>
  %x = dynb.zeros : tensor<5xf32>
  // expected-error @+1 {{'dynb.linear_grad' op input [5] does not end in 3, the columns of @W [2, 3]}}
  dynb.linear_grad %d, %x weight @W : tensor<2xf32>, tensor<5xf32>
  dynb.output %x : tensor<5xf32>
}

// -----

dynb.param @W : tensor<2x3xf32>
dynb.param @b : tensor<3xf32>
dynb.instance {
  %d = dynb.zeros : tensor<2xf32>
  %x = dynb.zeros : tensor<3xf32>
  // expected-error @+1 {{'dynb.linear_grad' op bias @b has 3 elements, the weight has 2 rows}}
  dynb.linear_grad %d, %x weight @W bias @b : tensor<2xf32>, tensor<3xf32>
  dynb.output %x : tensor<3xf32>
}

// -----

dynb.param @E : tensor<10x3xf32>
dynb.instance {
  %d = dynb.zeros : tensor<3xf32>
  // expected-error @+1 {{'dynb.embedding_grad' op index 10 is outside table @E of 10 rows}}
  dynb.embedding_grad %d table @E [10] : tensor<3xf32>
  dynb.output %d : tensor<3xf32>
}

// -----

dynb.param @E : tensor<10x3xf32>
dynb.instance {
  %d = dynb.zeros : tensor<4xf32>
  // expected-error @+1 {{'dynb.embedding_grad' op adjoint rows [4] are not rows of @E [10, 3]}}
  dynb.embedding_grad %d table @E [1] : tensor<4xf32>
  dynb.output %d : tensor<4xf32>
}

// -----

dynb.param @E : tensor<10x3xf32>
func.func @f(%d: tensor<3x3xf32>) {
  // expected-error @+1 {{'dynb.batched_embedding_grad' op adjoint [3, 3] must have 2 rows, one per index}}
  dynb.batched_embedding_grad %d table @E rows [1, 2] : tensor<3x3xf32>
  return
}
