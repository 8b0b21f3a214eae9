// A hand-written CLEVR batch at small sizes: 12-channel 6x6 features, module
// dim 8, three programs (a chain, a binary join, scene alone). 12 and 4
// channels take the runtime's channels-last layout, 8 and 16 the blocked one.
dynb.param @features : tensor<3x12x6x6xf32>
dynb.param @stem.conv1.weight : tensor<8x12x3x3xf32>
dynb.param @stem.conv1.bias : tensor<8xf32>
dynb.param @stem.conv2.weight : tensor<8x8x3x3xf32>
dynb.param @stem.conv2.bias : tensor<8xf32>
dynb.param @scene.conv1.weight : tensor<8x8x3x3xf32>
dynb.param @scene.conv1.bias : tensor<8xf32>
dynb.param @scene.conv2.weight : tensor<8x8x3x3xf32>
dynb.param @scene.conv2.bias : tensor<8xf32>
dynb.param @filt.conv1.weight : tensor<8x8x3x3xf32>
dynb.param @filt.conv1.bias : tensor<8xf32>
dynb.param @filt.conv2.weight : tensor<8x8x3x3xf32>
dynb.param @filt.conv2.bias : tensor<8xf32>
dynb.param @join.proj.weight : tensor<8x16x1x1xf32>
dynb.param @join.proj.bias : tensor<8xf32>
dynb.param @join.conv1.weight : tensor<8x8x3x3xf32>
dynb.param @join.conv1.bias : tensor<8xf32>
dynb.param @join.conv2.weight : tensor<8x8x3x3xf32>
dynb.param @join.conv2.bias : tensor<8xf32>
dynb.param @classifier.proj.weight : tensor<12x8x1x1xf32>
dynb.param @classifier.proj.bias : tensor<12xf32>
dynb.param @classifier.fc1.weight : tensor<10x108xf32>
dynb.param @classifier.fc1.bias : tensor<10xf32>
dynb.param @classifier.fc2.weight : tensor<4x10xf32>
dynb.param @classifier.fc2.bias : tensor<4xf32>

func.func @stem(%x: tensor<12x6x6xf32>) -> tensor<8x6x6xf32> {
  %a = dynb.conv2d %x weight @stem.conv1.weight bias @stem.conv1.bias padding 1 : tensor<12x6x6xf32> -> tensor<8x6x6xf32>
  %b = dynb.relu %a : tensor<8x6x6xf32>
  %c = dynb.conv2d %b weight @stem.conv2.weight bias @stem.conv2.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %d = dynb.relu %c : tensor<8x6x6xf32>
  return %d : tensor<8x6x6xf32>
}
func.func @scene(%x: tensor<8x6x6xf32>) -> tensor<8x6x6xf32> {
  %a = dynb.conv2d %x weight @scene.conv1.weight bias @scene.conv1.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %b = dynb.relu %a : tensor<8x6x6xf32>
  %c = dynb.conv2d %b weight @scene.conv2.weight bias @scene.conv2.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %d = dynb.add %x, %c : tensor<8x6x6xf32>
  %e = dynb.relu %d : tensor<8x6x6xf32>
  return %e : tensor<8x6x6xf32>
}
func.func @filt(%x: tensor<8x6x6xf32>) -> tensor<8x6x6xf32> {
  %a = dynb.conv2d %x weight @filt.conv1.weight bias @filt.conv1.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %b = dynb.relu %a : tensor<8x6x6xf32>
  %c = dynb.conv2d %b weight @filt.conv2.weight bias @filt.conv2.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %d = dynb.add %x, %c : tensor<8x6x6xf32>
  %e = dynb.relu %d : tensor<8x6x6xf32>
  return %e : tensor<8x6x6xf32>
}
func.func @join(%x: tensor<8x6x6xf32>, %y: tensor<8x6x6xf32>) -> tensor<8x6x6xf32> {
  %j = dynb.channel_concat %x, %y : (tensor<8x6x6xf32>, tensor<8x6x6xf32>) -> tensor<16x6x6xf32>
  %p = dynb.conv2d %j weight @join.proj.weight bias @join.proj.bias padding 0 : tensor<16x6x6xf32> -> tensor<8x6x6xf32>
  %q = dynb.relu %p : tensor<8x6x6xf32>
  %a = dynb.conv2d %q weight @join.conv1.weight bias @join.conv1.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %b = dynb.relu %a : tensor<8x6x6xf32>
  %c = dynb.conv2d %b weight @join.conv2.weight bias @join.conv2.bias padding 1 : tensor<8x6x6xf32> -> tensor<8x6x6xf32>
  %d = dynb.add %q, %c : tensor<8x6x6xf32>
  %e = dynb.relu %d : tensor<8x6x6xf32>
  return %e : tensor<8x6x6xf32>
}
func.func @classifier(%x: tensor<8x6x6xf32>) -> tensor<4xf32> {
  %a = dynb.conv2d %x weight @classifier.proj.weight bias @classifier.proj.bias padding 0 : tensor<8x6x6xf32> -> tensor<12x6x6xf32>
  %b = dynb.relu %a : tensor<12x6x6xf32>
  %p = dynb.maxpool2d %b : tensor<12x6x6xf32> -> tensor<12x3x3xf32>
  %f = dynb.flatten %p : tensor<12x3x3xf32> -> tensor<108xf32>
  %h = dynb.linear %f weight @classifier.fc1.weight bias @classifier.fc1.bias : tensor<108xf32> -> tensor<10xf32>
  %r = dynb.relu %h : tensor<10xf32>
  %y = dynb.linear %r weight @classifier.fc2.weight bias @classifier.fc2.bias : tensor<10xf32> -> tensor<4xf32>
  return %y : tensor<4xf32>
}
dynb.instance {
  %f = dynb.embedding @features [0] : tensor<12x6x6xf32>
  %s = dynb.call @stem(%f) : (tensor<12x6x6xf32>) -> tensor<8x6x6xf32>
  %n0 = dynb.call @scene(%s) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %n1 = dynb.call @filt(%n0) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %y = dynb.call @classifier(%n1) : (tensor<8x6x6xf32>) -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}
dynb.instance {
  %f = dynb.embedding @features [1] : tensor<12x6x6xf32>
  %s = dynb.call @stem(%f) : (tensor<12x6x6xf32>) -> tensor<8x6x6xf32>
  %n0 = dynb.call @scene(%s) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %n1 = dynb.call @filt(%n0) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %n2 = dynb.call @filt(%n1) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %n3 = dynb.call @scene(%s) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %n4 = dynb.call @join(%n2, %n3) : (tensor<8x6x6xf32>, tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %y = dynb.call @classifier(%n4) : (tensor<8x6x6xf32>) -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}
dynb.instance {
  %f = dynb.embedding @features [2] : tensor<12x6x6xf32>
  %s = dynb.call @stem(%f) : (tensor<12x6x6xf32>) -> tensor<8x6x6xf32>
  %n0 = dynb.call @scene(%s) : (tensor<8x6x6xf32>) -> tensor<8x6x6xf32>
  %y = dynb.call @classifier(%n0) : (tensor<8x6x6xf32>) -> tensor<4xf32>
  dynb.output %y : tensor<4xf32>
}
