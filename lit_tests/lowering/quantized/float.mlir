// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// quantize: x * (1 / scale) in f32, rounded half away from zero (|v|, floor, +1 where the fraction
// is >= 0.5, sign back), clamped in f32, converted, plus the zero point
// CHECK-LABEL: sym_name = "quantize"
// CHECK: %[[R:.*]] = "tosa.const"() <{values = dense<2.000000e+00> : tensor<1xf32>}>
// CHECK: %[[V:.*]] = "tosa.mul"(%arg{{[0-9]+}}, %[[R]], %{{.*}})
// CHECK: %[[A:.*]] = "tosa.abs"(%[[V]])
// CHECK: %[[F:.*]] = "tosa.floor"(%[[A]])
// CHECK: %[[D:.*]] = "tosa.sub"(%[[A]], %[[F]])
// CHECK: "tosa.greater_equal"(%[[D]], %{{.*}})
// CHECK: "tosa.negate"
// CHECK: "tosa.clamp"({{.*}}) <{max_val = 1.300000e+02 : f32, min_val = -1.250000e+02 : f32
// CHECK: "tosa.cast"({{.*}}) : (tensor<4xf32>) -> tensor<4xi32>
// CHECK: "tosa.cast"({{.*}}) : (tensor<4xi32>) -> tensor<4xi8>
func.func @quantize(%x: tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>> {
  %y = "nn.quantize"(%x) : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
  return %y : tensor<4x!quant.uniform<i8:f32, 0.5:-3>>
}

// dequantize: (x - zp) as i32, CAST to f32, times the scale: CpuRef's float32 product exactly
// (uint8 input: the boundary RESCALE first, the carried zero point 100 - 128 = -28)
// CHECK-LABEL: sym_name = "dequantize"
// CHECK: %[[S:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}input_unsigned = true
// CHECK: %[[I:.*]] = "tosa.cast"(%[[S]]) : (tensor<4xi8>) -> tensor<4xi32>
// CHECK: %[[Z:.*]] = "tosa.const"() <{values = dense<-28> : tensor<1xi32>}>
// CHECK: %[[C:.*]] = "tosa.sub"(%[[I]], %[[Z]])
// CHECK: %[[F:.*]] = "tosa.cast"(%[[C]]) : (tensor<4xi32>) -> tensor<4xf32>
// CHECK: "tosa.mul"(%[[F]], %{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<1xf32>, tensor<1xi8>) -> tensor<4xf32>
func.func @dequantize(%x: tensor<4x!quant.uniform<u8:f32, 0.5:100>>) -> tensor<4xf32> {
  %y = "nn.dequantize"(%x) : (tensor<4x!quant.uniform<u8:f32, 0.5:100>>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// division under the default (LiteRT) semantics: TFLite's DivElementwise in integers. The divisor's
// sign moves to the dividend, its reciprocal is CLZ-normalized Newton-Raphson (MUL with shift 31),
// the dividend is shifted by its redundant sign bits (CLZ of x ^ (x >> 31)), and the product is
// rounding-shifted per element; no INTDIV, SELECT or float
// CHECK-LABEL: sym_name = "division"
// CHECK-NOT: "tosa.intdiv"
// CHECK-NOT: "tosa.select"
// CHECK: "tosa.clz"
// CHECK: "tosa.bitwise_xor"
// CHECK: "tosa.clz"
// CHECK: "tosa.mul"({{.*}}) : (tensor<4xi32>, tensor<4xi32>, tensor<1xi8>) -> tensor<4xi32>
// CHECK: "tosa.arithmetic_right_shift"({{.*}}) <{round = true}>
// CHECK: "tosa.rescale"({{.*}}) -> tensor<4xi8>
func.func @division(%a: tensor<4x!quant.uniform<i8:f32, 0.5>>, %b: tensor<4x!quant.uniform<i8:f32, 0.25>>) -> tensor<4x!quant.uniform<i8:f32, 0.125>> {
  %y = "nn.div"(%a, %b) : (tensor<4x!quant.uniform<i8:f32, 0.5>>, tensor<4x!quant.uniform<i8:f32, 0.25>>) -> tensor<4x!quant.uniform<i8:f32, 0.125>>
  return %y : tensor<4x!quant.uniform<i8:f32, 0.125>>
}

// int16 division is TFLite's integer kernel too (CpuRef's semantics compute it in f32)
// CHECK-LABEL: sym_name = "division_int16"
// CHECK-NOT: "tosa.reciprocal"
// CHECK-NOT: "tosa.floor"
// CHECK: "tosa.clz"
// CHECK: "tosa.rescale"({{.*}}) -> tensor<4xi16>
func.func @division_int16(%a: tensor<4x!quant.uniform<i16:f32, 6.1E-5>>, %b: tensor<4x!quant.uniform<i16:f32, 6.1E-5>>) -> tensor<4x!quant.uniform<i16:f32, 6.2E-5>> {
  %y = "nn.div"(%a, %b) : (tensor<4x!quant.uniform<i16:f32, 6.1E-5>>, tensor<4x!quant.uniform<i16:f32, 6.1E-5>>) -> tensor<4x!quant.uniform<i16:f32, 6.2E-5>>
  return %y : tensor<4x!quant.uniform<i16:f32, 6.2E-5>>
}
