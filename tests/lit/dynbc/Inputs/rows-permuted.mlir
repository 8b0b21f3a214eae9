dynb.param @E : tensor<6x4xf32>
dynb.param @W : tensor<3x4xf32>
dynb.instance {
  %e = dynb.embedding @E [3] : tensor<4xf32>
  %y = dynb.linear %e weight @W : tensor<4xf32> -> tensor<3xf32>
  %t = dynb.tanh %y : tensor<3xf32>
  dynb.output %e, %t : tensor<4xf32>, tensor<3xf32>
}
dynb.instance {
  %e = dynb.embedding @E [1] : tensor<4xf32>
  %y = dynb.linear %e weight @W : tensor<4xf32> -> tensor<3xf32>
  %t = dynb.tanh %y : tensor<3xf32>
  dynb.output %e, %t : tensor<4xf32>, tensor<3xf32>
}
dynb.instance {
  %e = dynb.embedding @E [2] : tensor<4xf32>
  %y = dynb.linear %e weight @W : tensor<4xf32> -> tensor<3xf32>
  %t = dynb.tanh %y : tensor<3xf32>
  dynb.output %e, %t : tensor<4xf32>, tensor<3xf32>
}
