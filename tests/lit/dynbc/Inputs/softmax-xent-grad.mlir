// Logits from a linear, and their loss's adjoint as an output, for
// softmax-xent-grad.test.
dynb.param @E : tensor<10x4xf32>
dynb.param @W : tensor<5x4xf32>
dynb.instance {
  %x = dynb.embedding @E [1] : tensor<4xf32>
  %z = dynb.linear %x weight @W : tensor<4xf32> -> tensor<5xf32>
  %d = dynb.softmax_xent_grad %z label 3 : tensor<5xf32> -> tensor<5xf32>
  dynb.output %d : tensor<5xf32>
}
dynb.instance {
  %x = dynb.embedding @E [6] : tensor<4xf32>
  %z = dynb.linear %x weight @W : tensor<4xf32> -> tensor<5xf32>
  %d = dynb.softmax_xent_grad %z label 0 : tensor<5xf32> -> tensor<5xf32>
  %y = dynb.embedding @E [2] : tensor<4xf32>
  %w = dynb.linear %y weight @W : tensor<4xf32> -> tensor<5xf32>
  %e = dynb.softmax_xent_grad %w label 4 : tensor<5xf32> -> tensor<5xf32>
  %s = dynb.add %d, %e : tensor<5xf32>
  dynb.output %s : tensor<5xf32>
}
