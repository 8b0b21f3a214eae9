// RUN: dynb-opt %s | dynb-opt | FileCheck %s

// The ops dynb-grad writes into adjoint modules print and parse back.
dynb.param @W : tensor<6x2xf32>

// CHECK-LABEL: func.func @adjoints
func.func @adjoints(%y: tensor<2xf32>, %d: tensor<2xf32>, %dz: tensor<6xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<6xf32>) {
  // CHECK: dynb.sigmoid_grad %{{.*}}, %{{.*}} : tensor<2xf32>
  %a = dynb.sigmoid_grad %y, %d : tensor<2xf32>
  // CHECK: dynb.tanh_grad %{{.*}}, %{{.*}} : tensor<2xf32>
  %b = dynb.tanh_grad %y, %d : tensor<2xf32>
  // CHECK: dynb.relu_grad %{{.*}}, %{{.*}} : tensor<2xf32>
  %c = dynb.relu_grad %y, %d : tensor<2xf32>
  // CHECK: dynb.linear_transpose %{{.*}} weight @W : tensor<6xf32> -> tensor<2xf32>
  %x = dynb.linear_transpose %dz weight @W : tensor<6xf32> -> tensor<2xf32>
  // CHECK: dynb.pad %{{.*}}[4] : tensor<2xf32> -> tensor<6xf32>
  %p = dynb.pad %d [4] : tensor<2xf32> -> tensor<6xf32>
  return %a, %b, %c, %x, %p : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<6xf32>
}
