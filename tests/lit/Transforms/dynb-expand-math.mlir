// RUN: dynb-opt %s -dynb-expand-math | FileCheck %s

// tanh and exp become polynomials over arith ops and the math ops that are
// single instructions (fma, floor, absf); nothing calls libm.
// CHECK-LABEL: func.func @tanh_exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.exp
// CHECK: math.fma
// CHECK: math.floor
// CHECK: arith.bitcast
// CHECK: return
func.func @tanh_exp(%x: f32) -> (f32, f32) {
  %t = math.tanh %x : f32
  %e = math.exp %x : f32
  return %t, %e : f32, f32
}
