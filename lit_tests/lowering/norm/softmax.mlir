// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// softmax: beta * x, minus the maximum along the axis, exp, times the reciprocal of the sum.
// CHECK-LABEL: sym_name = "softmax"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: %[[Z:.*]] = "tosa.mul"(%[[X]], %{{.*}}, %{{.*}})
// CHECK: %[[M:.*]] = "tosa.reduce_max"(%[[Z]]) <{axis = 1 : i32
// CHECK: %[[D:.*]] = "tosa.sub"(%[[Z]], %[[M]])
// CHECK: %[[E:.*]] = "tosa.exp"(%[[D]])
// CHECK: %[[S:.*]] = "tosa.reduce_sum"(%[[E]]) <{axis = 1 : i32}>
// CHECK: %[[R:.*]] = "tosa.reciprocal"(%[[S]])
// CHECK: "tosa.mul"(%[[E]], %[[R]], %{{.*}})
func.func @softmax(%x: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %a = "nn.softmax"(%x) {axis = 1 : i64, beta = 0.5 : f64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %a : tensor<2x5xf32>
}

// log_softmax (beta 1: no scaling): shifted - log(sum(exp(shifted))); f16 computes in f32.
// CHECK-LABEL: sym_name = "log_softmax_f16"
// CHECK: %[[W:.*]] = "tosa.cast"(%{{.*}}) : (tensor<2x5xf16>) -> tensor<2x5xf32>
// CHECK: %[[M:.*]] = "tosa.reduce_max"(%[[W]]) <{axis = 0 : i32
// CHECK: %[[D:.*]] = "tosa.sub"(%[[W]], %[[M]])
// CHECK: "tosa.exp"(%[[D]])
// CHECK: %[[L:.*]] = "tosa.log"
// CHECK: %[[Y:.*]] = "tosa.sub"(%[[D]], %[[L]])
// CHECK: "tosa.cast"(%[[Y]]) : (tensor<2x5xf32>) -> tensor<2x5xf16>
func.func @log_softmax_f16(%x: tensor<2x5xf16>) -> tensor<2x5xf16> {
  %a = "nn.log_softmax"(%x) {axis = 0 : i64, beta = 1.0 : f64} : (tensor<2x5xf16>) -> tensor<2x5xf16>
  return %a : tensor<2x5xf16>
}
