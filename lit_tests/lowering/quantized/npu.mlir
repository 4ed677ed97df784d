// LiteRT's integers in the forms Arm's Vela maps on every Ethos-U (U55 and U65 have no GATHER, INTDIV,
// SELECT, comparisons or BITWISE_AND; tests/lowering/test_vela.py compiles the corpus with Vela itself)
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// TFLite's AveragePool: one AVG_POOL2D summing the stored integers (zero points 0; TFLite sums
// them, not x - zp): its reciprocal multiplier rounds halves away from zero as TFLite's
// (sum +- n/2) / n does; padding (SAME) is out of the count in both
// CHECK-LABEL: sym_name = "avg_pool"
// CHECK: %[[ZP:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK: "tosa.avg_pool2d"(%arg{{[0-9]+}}, %[[ZP]], %[[ZP]]) <{acc_type = i32, kernel = array<i64: 3, 3>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}>
// CHECK-NOT: "tosa.depthwise_conv2d"
// CHECK-NOT: "tosa.intdiv"
// CHECK-NOT: "tosa.select"
func.func @avg_pool(%x: tensor<1x7x7x2x!quant.uniform<i8:f32, 0.02:5>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.02:5>> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, pad = array<i64: 1, 1, 1, 1>, count_pad = array<i64: 0, 0, 0, 0>, divisor = 0 : i64} : (tensor<1x7x7x2x!quant.uniform<i8:f32, 0.02:5>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.02:5>>
  return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.02:5>>
}

// uint8 (carried as int8 - 128 after the boundary's RESCALE): TFLite sums the unsigned integers, so
// both zero points are -128
// CHECK-LABEL: sym_name = "avg_pool_uint8"
// CHECK: %[[ZP:.*]] = "tosa.const"() <{values = dense<-128> : tensor<1xi8>}>
// CHECK: "tosa.avg_pool2d"(%{{[0-9]+}}, %[[ZP]], %[[ZP]])
func.func @avg_pool_uint8(%x: tensor<1x4x4x2x!quant.uniform<u8:f32, 0.02:128>>) -> tensor<1x2x2x2x!quant.uniform<u8:f32, 0.02:128>> {
  %y = "nn.avg_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, count_pad = array<i64: 0, 0, 0, 0>, divisor = 0 : i64} : (tensor<1x4x4x2x!quant.uniform<u8:f32, 0.02:128>>) -> tensor<1x2x2x2x!quant.uniform<u8:f32, 0.02:128>>
  return %y : tensor<1x2x2x2x!quant.uniform<u8:f32, 0.02:128>>
}

// softmax over 1000 classes (ResNet-50's): TFLite's kernel, the max on the i8 data, and its output shift
// past 31 (sums of 512 or more) as compiled: e - 32 through MAXIMUM, the e > 31 choice a
// multiplication by min(max(e - 31, 0), 1); no GATHER, INTDIV, SELECT or BITWISE_AND
// CHECK-LABEL: sym_name = "softmax_1000"
// CHECK: "tosa.reduce_max"(%arg{{[0-9]+}}) <{axis = 1 : i32{{.*}}: (tensor<1x1000xi8>) -> tensor<1x1xi8>
// CHECK-COUNT-4: "tosa.table"({{.*}}) : (tensor<1x1000xi8>, tensor<256xi8>) -> tensor<1x1000xi8>
// CHECK: "tosa.clz"
// CHECK: %[[NEAR:.*]] = "tosa.arithmetic_right_shift"({{.*}}) <{round = true}> : (tensor<1x1000xi32>, tensor<1x1xi32>) -> tensor<1x1000xi32>
// CHECK: "tosa.maximum"
// CHECK: "tosa.minimum"
// CHECK: %[[Y:.*]] = "tosa.add"(%[[NEAR]], {{.*}}) : (tensor<1x1000xi32>, tensor<1x1000xi32>) -> tensor<1x1000xi32>
// CHECK: "tosa.minimum"(%[[Y]]
// CHECK: "tosa.rescale"({{.*}}) -> tensor<1x1000xi8>
// CHECK-NOT: "tosa.gather"
// CHECK-NOT: "tosa.intdiv"
// CHECK-NOT: "tosa.select"
// CHECK-NOT: "tosa.bitwise_and"
func.func @softmax_1000(%x: tensor<1x1000x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x1000x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %y = "nn.softmax"(%x) {axis = 1 : i64, beta = 1.0 : f64} : (tensor<1x1000x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x1000x!quant.uniform<i8:f32, 0.00390625:-128>>
  return %y : tensor<1x1000x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// int16 logistic (TFLite's fixed point, scale 2**-12: multiplier 3, no shift): s = 3x, the sign as
// 2 (s >> 31) + 1, |s| >> 9 indexes the sigmoid table and its slopes through int8 TABLEs of their bytes,
// r = entry << 9 + fraction * slope, rounded by 2**-10, mirrored by the sign: no GATHER
// CHECK-LABEL: sym_name = "logistic16"
// CHECK: %[[S:.*]] = "tosa.mul"({{.*}}) : (tensor<1x16xi32>, tensor<1x1xi32>, tensor<1xi8>) -> tensor<1x16xi32>
// CHECK: "tosa.arithmetic_right_shift"(%[[S]], {{.*}}) <{round = false}>
// CHECK: "tosa.rescale"({{.*}}) -> tensor<1x16xi8>
// CHECK-COUNT-2: "tosa.table"({{.*}}) : (tensor<1x16xi8>, tensor<256xi8>) -> tensor<1x16xi8>
// CHECK-COUNT-2: "tosa.table"({{.*}}) : (tensor<1x16xi8>, tensor<256xi8>) -> tensor<1x16xi8>
// CHECK: "tosa.rescale"({{.*}}) -> tensor<1x16xi16>
// CHECK-NOT: "tosa.gather"
// CHECK-NOT: "tosa.select"
func.func @logistic16(%x: tensor<1x16x!quant.uniform<i16:f32, 0.000244140625>>) -> tensor<1x16x!quant.uniform<i16:f32, 3.0517578125e-05>> {
  %y = "nn.sigmoid"(%x) : (tensor<1x16x!quant.uniform<i16:f32, 0.000244140625>>) -> tensor<1x16x!quant.uniform<i16:f32, 3.0517578125e-05>>
  return %y : tensor<1x16x!quant.uniform<i16:f32, 3.0517578125e-05>>
}

// int16 leaky relu (alpha 0.2): TFLite's two rescaled branches in i32 and their MAXIMUM, which is its
// x >= zp choice on every input (checked at lowering time), instead of GREATER_EQUAL + SELECT
// CHECK-LABEL: sym_name = "leaky_relu16"
// CHECK: %[[V:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}) -> tensor<1x16xi32>
// CHECK: %[[HIGH:.*]] = "tosa.rescale"(%[[V]], {{.*}}) -> tensor<1x16xi32>
// CHECK: %[[LOW:.*]] = "tosa.rescale"(%[[V]], {{.*}}) -> tensor<1x16xi32>
// CHECK: %[[M:.*]] = "tosa.maximum"(%[[HIGH]], %[[LOW]])
// CHECK: "tosa.rescale"(%[[M]], {{.*}}) -> tensor<1x16xi16>
// CHECK-NOT: "tosa.select"
// CHECK-NOT: "tosa.greater_equal"
func.func @leaky_relu16(%x: tensor<1x16x!quant.uniform<i16:f32, 3.0518e-05>>) -> tensor<1x16x!quant.uniform<i16:f32, 2.1e-05>> {
  %y = "nn.leaky_relu"(%x) {alpha = 0.2 : f64} : (tensor<1x16x!quant.uniform<i16:f32, 3.0518e-05>>) -> tensor<1x16x!quant.uniform<i16:f32, 2.1e-05>>
  return %y : tensor<1x16x!quant.uniform<i16:f32, 2.1e-05>>
}

// int8 -> int16 requantize: TFLite's Requantize, one RESCALE with the input zero point (no GATHER)
// CHECK-LABEL: sym_name = "requantize_8_16"
// CHECK: %[[ZP:.*]] = "tosa.const"() <{values = dense<5> : tensor<1xi8>}>
// CHECK: "tosa.rescale"(%arg{{[0-9]+}}, %{{.*}}, %{{.*}}, %[[ZP]], %{{.*}}) {{.*}} -> tensor<1x16xi16>
// CHECK-NOT: "tosa.gather"
func.func @requantize_8_16(%x: tensor<1x16x!quant.uniform<i8:f32, 0.0235:5>>) -> tensor<1x16x!quant.uniform<i16:f32, 3.1e-05>> {
  %y = "nn.requantize"(%x) : (tensor<1x16x!quant.uniform<i8:f32, 0.0235:5>>) -> tensor<1x16x!quant.uniform<i16:f32, 3.1e-05>>
  return %y : tensor<1x16x!quant.uniform<i16:f32, 3.1e-05>>
}
