// The default semantics, TFLite's integer kernels (lowering/semantics.py); CpuRef's lowerings of the
// same ops are elementwise.mlir's and reduce_pool.mlir's (--semantics cpuref).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// mean as TFLite's QuantizedMeanOrSum: x - zp summed in i32 (over H and W: one DEPTHWISE_CONV2D of
// ones with the input zero point, what Vela makes of TFLite's MEAN; AVG_POOL2D would round once
// where TFLite rounds twice), then one MultiplyByQuantizedMultiplier (RESCALE DOUBLE_ROUND) by
// TFLite's own multiplier of s_x / (n s_y) = 1/8: no CpuRef half-away fix-up (no ABS, no SELECT)
// CHECK-LABEL: sym_name = "mean"
// CHECK-DAG: %[[ONES:.*]] = "tosa.const"() <{values = dense<1> : tensor<4x4x2x1xi8>}>
// CHECK-DAG: %[[ZP:.*]] = "tosa.const"() <{values = dense<3> : tensor<1xi8>}>
// CHECK: %[[S:.*]] = "tosa.depthwise_conv2d"(%arg{{[0-9]+}}, %[[ONES]], %{{.*}}, %[[ZP]], %{{.*}}) <{acc_type = i32, {{.*}}pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : {{.*}} -> tensor<1x1x1x2xi32>
// CHECK-NOT: "tosa.reduce_sum"
// CHECK-NOT: "tosa.abs"
// CHECK: %[[SH:.*]] = "tosa.const"() <{values = dense<33> : tensor<1xi8>}>
// CHECK: "tosa.rescale"(%[[S]], %{{.*}}, %[[SH]], {{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<1x1x1x2xi8>
func.func @mean(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>> {
  %y = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:3>>) -> tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
  return %y : tensor<1x1x1x2x!quant.uniform<i8:f32, 0.25:-1>>
}

// add as TFLite's kernel: each x - zp shifted left 20 bits and requantized by s / (2 max s) (0.5:
// 2**30 >> 31; 0.3: 1288490189 >> 32, two roundings), summed, and the sum requantized by
// 2 max s / (2**20 s_y) with the output zero point. Rounding each term once instead,
// (x - zp) * m >> (11 - e), gives the same outputs for all 256 x 256 input pairs here (checked at
// lowering), so each term is one RESCALE of the i8 input: the form Vela fuses into its ADD.
// CHECK-LABEL: sym_name = "add"
// CHECK-DAG: %[[HALF:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// CHECK-DAG: %[[S11:.*]] = "tosa.const"() <{values = dense<11> : tensor<1xi8>}>
// CHECK: %[[A:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %[[HALF]], %[[S11]], {{.*}}rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>{{.*}} : (tensor<4x8xi8>, {{.*}}) -> tensor<4x8xi32>
// CHECK-DAG: %[[M:.*]] = "tosa.const"() <{values = dense<1288490189> : tensor<1xi32>}>
// CHECK-DAG: %[[S12:.*]] = "tosa.const"() <{values = dense<12> : tensor<1xi8>}>
// CHECK: %[[B:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %[[M]], %[[S12]], {{.*}}rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>{{.*}} : (tensor<4x8xi8>, {{.*}}) -> tensor<4x8xi32>
// CHECK: %[[SUM:.*]] = "tosa.add"(%[[A]], %[[B]])
// CHECK: "tosa.rescale"(%[[SUM]], {{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<4x8xi8>
func.func @add(%a: tensor<4x8x!quant.uniform<i8:f32, 0.05:-3>>, %b: tensor<4x8x!quant.uniform<i8:f32, 0.03:7>>) -> tensor<4x8x!quant.uniform<i8:f32, 0.07:2>> {
  %y = "nn.add"(%a, %b) : (tensor<4x8x!quant.uniform<i8:f32, 0.05:-3>>, tensor<4x8x!quant.uniform<i8:f32, 0.03:7>>) -> tensor<4x8x!quant.uniform<i8:f32, 0.07:2>>
  return %y : tensor<4x8x!quant.uniform<i8:f32, 0.07:2>>
}

// For these scales rounding each term once changes 22 of the 65536 outputs: TFLite's two roundings
// stay (the shift left by 20 bits, multiplier 2**30 >> 10, then the DOUBLE_ROUND requantization).
// CHECK-LABEL: sym_name = "add_two_roundings"
// CHECK: %[[L:.*]] = "tosa.const"() <{values = dense<10> : tensor<1xi8>}>
// CHECK: %[[A20:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %{{.*}}, %[[L]], {{.*}}) -> tensor<4x8xi32>
// CHECK: %[[A:.*]] = "tosa.rescale"(%[[A20]], {{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<4x8xi32>
// CHECK: %[[B20:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %{{.*}}, %[[L]], {{.*}}) -> tensor<4x8xi32>
// CHECK: %[[B:.*]] = "tosa.rescale"(%[[B20]], {{.*}}) -> tensor<4x8xi32>
// CHECK: "tosa.add"(%[[A]], %[[B]])
func.func @add_two_roundings(%a: tensor<4x8x!quant.uniform<i8:f32, 0.082:5>>, %b: tensor<4x8x!quant.uniform<i8:f32, 0.083:-9>>) -> tensor<4x8x!quant.uniform<i8:f32, 0.056:19>> {
  %y = "nn.add"(%a, %b) : (tensor<4x8x!quant.uniform<i8:f32, 0.082:5>>, tensor<4x8x!quant.uniform<i8:f32, 0.083:-9>>) -> tensor<4x8x!quant.uniform<i8:f32, 0.056:19>>
  return %y : tensor<4x8x!quant.uniform<i8:f32, 0.056:19>>
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

