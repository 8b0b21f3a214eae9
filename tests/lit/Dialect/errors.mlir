// RUN: dynb-opt %s -split-input-file -verify-diagnostics -allow-unregistered-dialect

// expected-error @+1 {{'dynb.param' op must be a vector, a matrix, a stack of matrices (one per expert) or a rank-4 tensor (convolution weights, a table of feature maps), got rank 5}}
dynb.param @T : tensor<2x2x2x2x2xf32>

// -----

dynb.param @E : tensor<10x4xf32>
dynb.instance {
  // expected-error @+1 {{index 10 is outside table @E of 10 rows}}
  %x = dynb.embedding @E [10] : tensor<4xf32>
  dynb.output %x : tensor<4xf32>
}

// -----

dynb.instance {
  // expected-error @+1 {{refers to unknown parameter @nope as its table}}
  %x = dynb.embedding @nope [0] : tensor<4xf32>
  dynb.output %x : tensor<4xf32>
}

// -----

dynb.param @W : tensor<12x4xf32>
func.func @f(%x: tensor<5xf32>) -> tensor<12xf32> {
  // expected-error @+1 {{input [5] does not end in 4, the columns of @W [12, 4]}}
  %y = dynb.linear %x weight @W : tensor<5xf32> -> tensor<12xf32>
  return %y : tensor<12xf32>
}

// -----

dynb.param @W : tensor<12x4xf32>
dynb.param @b : tensor<11xf32>
func.func @f(%x: tensor<4xf32>) -> tensor<12xf32> {
  // expected-error @+1 {{bias @b has 11 elements, the weight has 12 rows}}
  %y = dynb.linear %x weight @W bias @b : tensor<4xf32> -> tensor<12xf32>
  return %y : tensor<12xf32>
}

// -----

func.func @f(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{slice [6, 4] (offset, size) does not fit in the last dimension of [8]}}
  %y = dynb.slice %x [6, 4] : tensor<8xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

func.func @f(%x: tensor<8xf32>, %y: tensor<2x8xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{input 1 [2, 8] differs from input 0 [8] before the last dimension}}
  %z = dynb.concat %x, %y : (tensor<8xf32>, tensor<2x8xf32>) -> tensor<16xf32>
  return %z : tensor<16xf32>
}

// -----

func.func @cell(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
dynb.instance {
  %x = "test.source"() : () -> tensor<8xf32>
  // expected-error @+1 {{operand 0 is [8] but module @cell expects [4]}}
  %h = dynb.call @cell(%x) : (tensor<8xf32>) -> tensor<4xf32>
  dynb.output %h : tensor<4xf32>
}

// -----

dynb.instance {
  %x = "test.source"() : () -> tensor<8xf32>
  // expected-error @+1 {{calls unknown module @nothing}}
  %h = dynb.call @nothing(%x) : (tensor<8xf32>) -> tensor<4xf32>
  dynb.output %h : tensor<4xf32>
}

// -----

func.func @cell(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
dynb.schedule depth first_instance 0 num_instances 2 launches 2 lower_bound 1 nodes 2 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  // expected-error @+1 {{result 0 is [3, 4] but module @cell returns [2, 4]}}
  %h = dynb.batched_call @cell(%x) : (tensor<2x4xf32>) -> tensor<3x4xf32>
  dynb.yield %x : tensor<2x4xf32>
}

// -----

dynb.schedule depth first_instance 0 num_instances 2 launches 1 lower_bound 1 nodes 2 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  // expected-error @+1 {{row 1 reads row 2 of source 0, which has 2}}
  %g = dynb.gather %x rows [0, 0, 0, 2] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  dynb.yield %g : tensor<2x4xf32>
}

// -----

dynb.schedule depth first_instance 0 num_instances 3 launches 1 lower_bound 1 nodes 3 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  // expected-error @+1 {{yields [2, 4] but outputs stack one row per instance (3)}}
  dynb.yield %x : tensor<2x4xf32>
}

// -----

// The counts a schedule declares are checked against its body.
// expected-error @+1 {{says it has 3 launches but its body has 1 (every op other than dynb.gather and dynb.yield is one)}}
dynb.schedule depth first_instance 0 num_instances 2 launches 3 lower_bound 1 nodes 4 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  %g = dynb.gather %x rows [0, 1, 0, 0] : (tensor<2x4xf32>) -> tensor<2x4xf32>
  dynb.yield %g : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{counts must satisfy lower_bound <= launches <= nodes, got 2, 1, 2}}
dynb.schedule depth first_instance 0 num_instances 2 launches 1 lower_bound 2 nodes 2 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  dynb.yield %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{counts must satisfy lower_bound <= launches <= nodes, got 1, 1, 0}}
dynb.schedule depth first_instance 0 num_instances 2 launches 1 lower_bound 1 nodes 0 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  dynb.yield %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{'dynb.schedule' op must end with 'dynb.yield'}}
dynb.schedule depth first_instance 0 num_instances 2 launches 1 lower_bound 1 nodes 2 {
  "test.source"() : () -> tensor<2x4xf32>
}

// -----

// expected-error @+1 {{enum values for attribute 'strategy' [none, depth, agenda]}}
dynb.schedule greedy first_instance 0 num_instances 2 launches 1 lower_bound 1 nodes 2 {
  %x = "test.source"() : () -> tensor<2x4xf32>
  dynb.yield %x : tensor<2x4xf32>
}

// -----

// expected-error @+1 {{'dynb.instance' op must end with 'dynb.output'}}
dynb.instance {
  "test.source"() : () -> tensor<2x4xf32>
}

// -----

// Found by fuzz-mlir: scalars have no last dimension to concat or slice.
func.func @f(%a: tensor<f32>, %b: tensor<f32>) -> tensor<f32> {
  // expected-error @+1 {{input 0 is a scalar; concat joins along the last dimension}}
  %c = dynb.concat %a, %b : (tensor<f32>, tensor<f32>) -> tensor<f32>
  return %c : tensor<f32>
}

// -----

func.func @f(%a: tensor<f32>) -> tensor<1xf32> {
  // expected-error @+1 {{input is a scalar; slice cuts the last dimension}}
  %c = dynb.slice %a [0, 1] : tensor<f32> -> tensor<1xf32>
  return %c : tensor<1xf32>
}

// -----

// Found by fuzz-mlir: an instance's values all come from its own ops.
// expected-error @+1 {{takes no block arguments}}
dynb.instance {
^bb0(%a: tensor<4xf32>):
  %t = dynb.tanh %a : tensor<4xf32>
  dynb.output %t : tensor<4xf32>
}
