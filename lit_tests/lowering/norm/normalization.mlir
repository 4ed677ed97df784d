// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// layer_norm over the last two axes: mean (one correction step: plus the mean of x - mean),
// centred values, their mean square, rsqrt(var + eps), then gamma and beta.
// CHECK-LABEL: sym_name = "layer_norm"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK: "tosa.reduce_sum"{{.*}} <{axis = 1 : i32}>
// CHECK: "tosa.reduce_sum"{{.*}} <{axis = 2 : i32}>
// CHECK: dense<0.0833333358>
// CHECK: %[[M:.*]] = "tosa.mul"
// CHECK: %[[D:.*]] = "tosa.sub"(%[[X]], %[[M]])
// CHECK: "tosa.reduce_sum"(%[[D]])
// CHECK: %[[M2:.*]] = "tosa.add"(%[[M]], %{{.*}})
// CHECK: %[[C:.*]] = "tosa.sub"(%[[X]], %[[M2]])
// CHECK: "tosa.mul"(%[[C]], %[[C]], %{{.*}})
// CHECK: dense<9.99999974E-6>
// CHECK: "tosa.rsqrt"
// CHECK: "tosa.add"
func.func @layer_norm(%x: tensor<2x3x4xf32>, %g: tensor<3x4xf32>, %b: tensor<4xf32>) -> tensor<2x3x4xf32> {
  %a = "nn.layer_norm"(%x, %g, %b) {axes = array<i64: 1, 2>, epsilon = 1.0e-5 : f64} : (tensor<2x3x4xf32>, tensor<3x4xf32>, tensor<4xf32>) -> tensor<2x3x4xf32>
  return %a : tensor<2x3x4xf32>
}

// batch_norm with constant statistics: scale = gamma / sqrt(var + eps) computed here (no RSQRT),
// (x - mean) * scale + beta along the channel axis.
// CHECK-LABEL: sym_name = "batch_norm_constant"
// CHECK-NOT: "tosa.rsqrt"
// CHECK-DAG: %[[M:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1.000000e+00, 2.000000e+00]]]]> : tensor<1x1x1x2xf32>}>
// CHECK-DAG: %[[S:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}5.000000e-01, 1.000000e+00]]]]> : tensor<1x1x1x2xf32>}>
// CHECK: %[[D:.*]] = "tosa.sub"(%{{.*}}, %[[M]])
// CHECK: "tosa.mul"(%[[D]], %[[S]], %{{.*}})
// CHECK: "tosa.add"
func.func @batch_norm_constant(%x: tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %m = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %v = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %g = "nn.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "nn.constant"() {value = dense<[0.5, 0.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %a = "nn.batch_norm"(%x, %m, %v, %g, %b) {epsilon = 1.0 : f64, axis = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %a : tensor<1x2x2x2xf32>
}

// Runtime statistics along axis 1: reshaped to [1, C, 1, 1], scale from RSQRT.
// CHECK-LABEL: sym_name = "batch_norm_runtime"
// CHECK: "tosa.reshape"{{.*}} -> tensor<1x2x1x1xf32>
// CHECK: "tosa.rsqrt"
func.func @batch_norm_runtime(%x: tensor<1x2x2x2xf32>, %m: tensor<2xf32>, %v: tensor<2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %a = "nn.batch_norm"(%x, %m, %v, %g, %b) {epsilon = 1.0e-3 : f64, axis = 1 : i64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %a : tensor<1x2x2x2xf32>
}

// instance_norm: statistics over the spatial axes 1 and 2 of NHWC.
// CHECK-LABEL: sym_name = "instance_norm"
// CHECK: "tosa.reduce_sum"{{.*}} <{axis = 1 : i32}>
// CHECK: "tosa.reduce_sum"{{.*}} <{axis = 2 : i32}> : (tensor<1x1x3x2xf32>) -> tensor<1x1x1x2xf32>
// CHECK: "tosa.rsqrt"
func.func @instance_norm(%x: tensor<1x4x3x2xf32>, %g: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<1x4x3x2xf32> {
  %a = "nn.instance_norm"(%x, %g, %b) {epsilon = 1.0e-5 : f64} : (tensor<1x4x3x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x3x2xf32>
  return %a : tensor<1x4x3x2xf32>
}

// l2_normalize: x * rsqrt(max(sum x^2, eps)), slices with |x| > 2^60 pre-scaled by 2^-64.
// CHECK-LABEL: sym_name = "l2_normalize"
// CHECK: "tosa.reduce_max"
// CHECK: dense<1.1529215E+18>
// CHECK: "tosa.reduce_sum"
// CHECK: "tosa.maximum"
// CHECK: "tosa.rsqrt"
func.func @l2_normalize(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = "nn.l2_normalize"(%x) {axes = array<i64: 1>, epsilon = 1.0e-12 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %a : tensor<2x3xf32>
}

// local_response_norm (radius 1): squares padded by 1 channel each side, three shifted slices
// summed, x * (bias + alpha * window)^-beta.
// CHECK-LABEL: sym_name = "lrn"
// CHECK: "tosa.pad"{{.*}} -> tensor<1x2x7xf32>
// CHECK-COUNT-3: "tosa.slice"{{.*}} -> tensor<1x2x5xf32>
// CHECK: "tosa.pow"
func.func @lrn(%x: tensor<1x2x5xf32>) -> tensor<1x2x5xf32> {
  %a = "nn.local_response_norm"(%x) {radius = 1 : i64, alpha = 1.0e-4 : f64, beta = 0.75 : f64, bias = 1.0 : f64} : (tensor<1x2x5xf32>) -> tensor<1x2x5xf32>
  return %a : tensor<1x2x5xf32>
}
