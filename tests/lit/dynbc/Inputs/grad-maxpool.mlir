// A loss behind a feature-map op reverse mode does not differentiate yet.
dynb.param @F : tensor<2x2x4x4xf32>
dynb.instance {
  %m = dynb.embedding @F [1] : tensor<2x4x4xf32>
  %p = dynb.maxpool2d %m : tensor<2x4x4xf32> -> tensor<2x2x2xf32>
  %f = dynb.flatten %p : tensor<2x2x2xf32> -> tensor<8xf32>
  %l = dynb.softmax_xent %f label 0 : tensor<8xf32> -> tensor<1xf32>
  dynb.output %f : tensor<8xf32>
}
