// The default semantics, TFLite's integer kernels (lowering/semantics.py); CpuRef's lowerings of the
// same ops are elementwise.mlir's and reduce_pool.mlir's (--semantics cpuref).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// mean as TFLite's QuantizedMeanOrSum: x - zp summed in i32, then one MultiplyByQuantizedMultiplier
// (RESCALE DOUBLE_ROUND) by TFLite's own multiplier of s_x / (n s_y) = 1/8: no CpuRef half-away
// fix-up (no ABS, no SELECT)
// CHECK-LABEL: sym_name = "mean"
// CHECK: %[[X:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}) -> tensor<1x4x4x2xi32>
// CHECK: %[[S1:.*]] = "tosa.reduce_sum"(%[[X]]) <{axis = 1 : i32}>
// CHECK: %[[S2:.*]] = "tosa.reduce_sum"(%[[S1]]) <{axis = 2 : i32}>
// CHECK-NOT: "tosa.abs"
// CHECK: %[[SH:.*]] = "tosa.const"() <{values = dense<33> : tensor<1xi8>}>
// CHECK: "tosa.rescale"(%[[S2]], %{{.*}}, %[[SH]], {{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<1x1x1x2xi8>
func.func @mean(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>> {
  %y = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
  return %y : tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
}

// add as TFLite's kernel: each x - zp shifted left 20 bits (multiplier 2**30, shift 10), each
// requantized by s / (2 max s) (0.5: 2**30 >> 31; 0.3: 1288490189 >> 32, DOUBLE_ROUND), summed,
// and the sum requantized by 2 max s / (2**20 s_y) with the output zero point
// CHECK-LABEL: sym_name = "add"
// CHECK: %[[L:.*]] = "tosa.const"() <{values = dense<10> : tensor<1xi8>}>
// CHECK: %[[A20:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %{{.*}}, %[[L]], {{.*}}) -> tensor<4x8xi32>
// CHECK: %[[A:.*]] = "tosa.rescale"(%[[A20]], {{.*}}) -> tensor<4x8xi32>
// CHECK: %[[B20:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %{{.*}}, %[[L]], {{.*}}) -> tensor<4x8xi32>
// CHECK: "tosa.const"() <{values = dense<1288490189> : tensor<1xi32>}>
// CHECK: %[[B:.*]] = "tosa.rescale"(%[[B20]], {{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<4x8xi32>
// CHECK: %[[SUM:.*]] = "tosa.add"(%[[A]], %[[B]])
// CHECK: "tosa.rescale"(%[[SUM]], {{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<4x8xi8>
func.func @add(%a: tensor<4x8x!quant.uniform<i8:f32, 0.05:-3>>, %b: tensor<4x8x!quant.uniform<i8:f32, 0.03:7>>) -> tensor<4x8x!quant.uniform<i8:f32, 0.07:2>> {
  %y = "nn.add"(%a, %b) : (tensor<4x8x!quant.uniform<i8:f32, 0.05:-3>>, tensor<4x8x!quant.uniform<i8:f32, 0.03:7>>) -> tensor<4x8x!quant.uniform<i8:f32, 0.07:2>>
  return %y : tensor<4x8x!quant.uniform<i8:f32, 0.07:2>>
}

// softmax to TFLite's output quantization (1/256, -128): TFLite's
// reference kernel. The max is taken on the i8 data; x - max + 127 indexes four int8 TABLEs holding
// the bytes of gemmlowp's Q0.31 exp; the Q12.19 sum's reciprocal is CLZ-normalized Newton-Raphson;
// each output is a rounding shift by a per-row amount
// CHECK-LABEL: sym_name = "softmax_litert"
// CHECK: "tosa.reduce_max"(%arg{{[0-9]+}}) <{axis = 1 : i32
// CHECK-COUNT-4: "tosa.table"({{.*}}) : (tensor<2x8xi8>, tensor<256xi8>) -> tensor<2x8xi8>
// CHECK: "tosa.reduce_sum"({{.*}}) <{axis = 1 : i32}> : (tensor<2x8xi32>) -> tensor<2x1xi32>
// CHECK: "tosa.clz"({{.*}}) : (tensor<2x1xi32>) -> tensor<2x1xi32>
// CHECK: "tosa.arithmetic_right_shift"({{.*}}) <{round = true}> : (tensor<2x8xi32>, tensor<2x1xi32>) -> tensor<2x8xi32>
// CHECK-NOT: "tosa.gather"
// CHECK-NOT: "tosa.intdiv"
// CHECK: "tosa.rescale"({{.*}}) -> tensor<2x8xi8>
func.func @softmax_litert(%x: tensor<2x8x!quant.uniform<i8:f32, 0.1>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %y = "nn.softmax"(%x) {axis = 1 : i64, beta = 1.0 : f64} : (tensor<2x8x!quant.uniform<i8:f32, 0.1>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
  return %y : tensor<2x8x!quant.uniform<i8:f32, 0.00390625:-128>>
}

