// CpuRef's integers (--semantics cpuref); TFLite's, the default, are litert.mlir's
// RUN: %nn2tosa opt %s --semantics cpuref --passes=lower-to-tosa,cse,dce | %FileCheck %s

// mean: (x - zp) summed exactly in i32 (over H and W one DEPTHWISE_CONV2D of ones with the input
// zero point), one rounding by s_x / (count * s_y) = 1/8 (exact halves possible: rounded away from
// zero, see conv.mlir)
// CHECK-LABEL: sym_name = "mean"
// CHECK: %[[S:.*]] = "tosa.depthwise_conv2d"(%arg{{[0-9]+}}, {{.*}}) -> tensor<1x1x1x2xi32>
// CHECK-NOT: "tosa.reduce_sum"
// CHECK: %[[ABS:.*]] = "tosa.abs"(%[[S]])
// CHECK: %[[SH:.*]] = "tosa.const"() <{values = dense<33> : tensor<1xi8>}>
// CHECK: "tosa.rescale"(%[[ABS]], %{{.*}}, %[[SH]], {{.*}}) -> tensor<1x1x1x2xi32>
// CHECK: "tosa.rescale"({{.*}}) -> tensor<1x1x1x2xi8>
func.func @mean(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>> {
  %y = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
  return %y : tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
}

// softmax of i8 data to an output quantization TFLite's kernel refuses (it requires 1/256, -128):
// CpuRef's integer lowering. d = max - x in 0..255, exp(-beta * s * d) * 2**k from a 256-entry i32
// GATHER table, and round(e / sum / s_y) = (2 e / s_y + sum) / (2 sum), one integer division
// CHECK-LABEL: sym_name = "softmax"
// CHECK: %[[X:.*]] = "tosa.cast"(%arg{{[0-9]+}}) : (tensor<2x8xi8>) -> tensor<2x8xi32>
// CHECK: %[[M:.*]] = "tosa.reduce_max"(%[[X]]) <{axis = 1 : i32
// CHECK: %[[D:.*]] = "tosa.sub"(%[[M]], %[[X]])
// CHECK: %[[T:.*]] = "tosa.const"() <{values = {{.*}} : tensor<1x256x1xi32>}>
// CHECK: %[[G:.*]] = "tosa.gather"(%[[T]], %{{.*}})
// CHECK: %[[E:.*]] = "tosa.reshape"(%[[G]], %{{.*}}) : {{.*}} -> tensor<2x8xi32>
// CHECK: %[[SUM:.*]] = "tosa.reduce_sum"(%[[E]]) <{axis = 1 : i32}>
// CHECK: %[[N:.*]] = "tosa.rescale"(%[[E]], {{.*}}) -> tensor<2x8xi32>
// CHECK: %[[NUM:.*]] = "tosa.add"(%[[N]], %[[SUM]])
// CHECK: %[[DEN:.*]] = "tosa.add"(%[[SUM]], %[[SUM]])
// CHECK: "tosa.intdiv"(%[[NUM]], %[[DEN]])
func.func @softmax(%x: tensor<2x8x!quant.uniform<i8:f32, 0.1>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.0039215686:-128>> {
  %y = "nn.softmax"(%x) {axis = 1 : i64, beta = 1.0 : f64} : (tensor<2x8x!quant.uniform<i8:f32, 0.1>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.0039215686:-128>>
  return %y : tensor<2x8x!quant.uniform<i8:f32, 0.0039215686:-128>>
}

// avg_pool2d, one quantization in and out: AVG_POOL2D with the zero points; the counted padding
// (top and bottom here) is padded explicitly with the zero point (real 0), the rest is TOSA's
// uncounted padding
// CHECK-LABEL: sym_name = "avg_pool"
// CHECK: %[[ZP:.*]] = "tosa.const"() <{values = dense<3> : tensor<1xi8>}>
// CHECK: "tosa.pad"(%{{.*}}, %{{.*}}, %[[ZP]])
// CHECK: "tosa.avg_pool2d"(%{{.*}}, %[[ZP]], %[[ZP]]) <{acc_type = i32, kernel = array<i64: 3, 3>, pad = array<i64: 0, 0, 1, 1>
func.func @avg_pool(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, count_pad = array<i64: 1, 1, 0, 0>, divisor = 0 : i64} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>
  return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>
}
