// RUN: dynb-opt %s -dynb-grad | FileCheck %s
// RUN: dynb-opt %s -dynb-grad -dynb-grad | FileCheck %s --check-prefix=TWICE

// A TreeLSTM leaf cell: c = i * u, h = o * tanh(c), with i, o, u slices of
// one linear's output.
dynb.param @W : tensor<6x2xf32>
dynb.param @b : tensor<6xf32>

func.func @leaf(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %y = dynb.linear %x weight @W bias @b : tensor<2xf32> -> tensor<6xf32>
  %i = dynb.slice %y [0, 2] : tensor<6xf32> -> tensor<2xf32>
  %o = dynb.slice %y [2, 2] : tensor<6xf32> -> tensor<2xf32>
  %u = dynb.slice %y [4, 2] : tensor<6xf32> -> tensor<2xf32>
  %si = dynb.sigmoid %i : tensor<2xf32>
  %so = dynb.sigmoid %o : tensor<2xf32>
  %tu = dynb.tanh %u : tensor<2xf32>
  %c = dynb.mul %si, %tu : tensor<2xf32>
  %tc = dynb.tanh %c : tensor<2xf32>
  %h = dynb.mul %so, %tc : tensor<2xf32>
  return %h, %c : tensor<2xf32>, tensor<2xf32>
}

// The forward module is the cell again, also returning what the adjoint
// reads: the sigmoid and tanh outputs (the factors of both products) and the
// linear's input.
// CHECK-LABEL: func.func @leaf_fwd(
// CHECK-SAME: %[[X:[^:]*]]: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>)
// CHECK-SAME: attributes {dynb.grad.forward_of = @leaf}
// CHECK: %[[SI:.*]] = dynb.sigmoid
// CHECK: %[[SO:.*]] = dynb.sigmoid
// CHECK: %[[TU:.*]] = dynb.tanh
// CHECK: %[[C:.*]] = dynb.mul %[[SI]], %[[TU]]
// CHECK: %[[TC:.*]] = dynb.tanh %[[C]]
// CHECK: %[[H:.*]] = dynb.mul %[[SO]], %[[TC]]
// CHECK: return %[[H]], %[[C]], %[[SO]], %[[TC]], %[[SI]], %[[TU]], %[[X]]

// The adjoint module takes the results' adjoints (dh, dc), then the saved
// values in the order the forward returns them. c has two uses (h's tanh and
// the result), so its adjoints are summed; the three slices tile the
// linear's output, so their adjoints are one concat; the linear's input
// adjoint is dy W. It returns
// the argument's adjoint and the linear's output adjoint, from which the
// weight gradient is dyᵀ x over a launch's rows (dynb.grad.linears: input 4
// is the fifth saved value, x).
// CHECK-LABEL: func.func @leaf_adj(
// CHECK-SAME: %[[DH:[^:]*]]: tensor<2xf32>, %[[DC:[^:]*]]: tensor<2xf32>, %[[SO:[^:]*]]: tensor<2xf32>, %[[TC:[^:]*]]: tensor<2xf32>, %[[SI:[^:]*]]: tensor<2xf32>, %[[TU:[^:]*]]: tensor<2xf32>, %[[X:[^:]*]]: tensor<2xf32>) -> (tensor<2xf32>, tensor<6xf32>)
// CHECK-SAME: attributes {dynb.grad.adjoint_of = @leaf, dynb.grad.args = array<i64: 0>, dynb.grad.linears = [{bias = @b, input = 4 : i64, weight = @W}]}
// CHECK: %[[DSO:.*]] = dynb.mul %[[DH]], %[[TC]]
// CHECK: %[[DTC:.*]] = dynb.mul %[[DH]], %[[SO]]
// CHECK: %[[DC1:.*]] = dynb.tanh_grad %[[TC]], %[[DTC]]
// CHECK: %[[DCS:.*]] = dynb.add %[[DC]], %[[DC1]]
// CHECK: %[[DSI:.*]] = dynb.mul %[[DCS]], %[[TU]]
// CHECK: %[[DTU:.*]] = dynb.mul %[[DCS]], %[[SI]]
// CHECK: %[[DU:.*]] = dynb.tanh_grad %[[TU]], %[[DTU]]
// CHECK: %[[DO:.*]] = dynb.sigmoid_grad %[[SO]], %[[DSO]]
// CHECK: %[[DI:.*]] = dynb.sigmoid_grad %[[SI]], %[[DSI]]
// CHECK: %[[DY:.*]] = dynb.concat %[[DI]], %[[DO]], %[[DU]] : (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<6xf32>
// CHECK: %[[DX:.*]] = dynb.linear_transpose %[[DY]] weight @W : tensor<6xf32> -> tensor<2xf32>
// CHECK: return %[[DX]], %[[DY]] : tensor<2xf32>, tensor<6xf32>

// Run again, the pass leaves differentiated modules alone.
// TWICE-COUNT-9: func.func
// TWICE-NOT: func.func

// A concat's adjoint is slices of the incoming adjoint; an argument nothing
// depends on gets no adjoint (dynb.grad.args lists the others); add and neg
// save nothing; relu saves its input.
func.func @mix(%a: tensor<2xf32>, %b: tensor<3xf32>, %unused: tensor<4xf32>) -> tensor<5xf32> {
  %r = dynb.relu %a : tensor<2xf32>
  %n = dynb.neg %b : tensor<3xf32>
  %cc = dynb.concat %r, %n : (tensor<2xf32>, tensor<3xf32>) -> tensor<5xf32>
  %s = dynb.add %cc, %cc : tensor<5xf32>
  return %s : tensor<5xf32>
}
// CHECK-LABEL: func.func @mix_fwd
// CHECK: return %{{.*}}, %{{.*}} : tensor<5xf32>, tensor<2xf32>
// CHECK-LABEL: func.func @mix_adj(
// CHECK-SAME: %[[DS:[^:]*]]: tensor<5xf32>, %[[A:[^:]*]]: tensor<2xf32>) -> (tensor<2xf32>, tensor<3xf32>)
// CHECK-SAME: dynb.grad.args = array<i64: 0, 1>, dynb.grad.linears = []
// CHECK: %[[D:.*]] = dynb.add %[[DS]], %[[DS]]
// CHECK: %[[DR:.*]] = dynb.slice %[[D]][0, 2]
// CHECK: %[[DN:.*]] = dynb.slice %[[D]][2, 3]
// CHECK: %[[DB:.*]] = dynb.neg %[[DN]]
// CHECK: %[[DA:.*]] = dynb.relu_grad %[[A]], %[[DR]]
// CHECK: return %[[DA]], %[[DB]]

// Slices that overlap (or leave a gap) cannot be joined by a concat: each
// adjoint is padded to the sliced width and the pads are summed.
func.func @overlap(%x: tensor<4xf32>) -> (tensor<2xf32>, tensor<3xf32>) {
  %a = dynb.slice %x [0, 2] : tensor<4xf32> -> tensor<2xf32>
  %b = dynb.slice %x [1, 3] : tensor<4xf32> -> tensor<3xf32>
  return %a, %b : tensor<2xf32>, tensor<3xf32>
}
// CHECK-LABEL: func.func @overlap_adj(
// CHECK-SAME: %[[DA:[^:]*]]: tensor<2xf32>, %[[DB:[^:]*]]: tensor<3xf32>) -> tensor<4xf32>
// CHECK: %[[PA:.*]] = dynb.pad %[[DA]][0] : tensor<2xf32> -> tensor<4xf32>
// CHECK: %[[PB:.*]] = dynb.pad %[[DB]][1] : tensor<3xf32> -> tensor<4xf32>
// CHECK: %[[D:.*]] = dynb.add %[[PA]], %[[PB]]
// CHECK: return %[[D]] : tensor<4xf32>
