// Elementwise forms Vela maps as cheaply as the .tflite's own operator (TFLite's integers, the
// default semantics; each form is checked at lowering against the kernel on every input).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// int8 abs (q8_abs's quantization): TFLite's |x - zp| times the ratio of the scales as RESCALE to
// i32 (input zero point), ABS, RESCALE to int8 (Vela fuses the three into one ABS), not a TABLE
// CHECK-LABEL: sym_name = "abs_i8"
// CHECK-NOT: "tosa.table"
// CHECK: %[[W:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}) -> tensor<2x8xi32>
// CHECK: %[[A:.*]] = "tosa.abs"(%[[W]]) : (tensor<2x8xi32>) -> tensor<2x8xi32>
// CHECK: %[[Y:.*]] = "tosa.rescale"(%[[A]], {{.*}}) -> tensor<2x8xi8>
// CHECK: "func.return"(%[[Y]])
func.func @abs_i8(%x: tensor<2x8x!quant.uniform<i8:f32, 0.007842489518225193:-1>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.003921543247997761:-128>> {
  %y = "nn.abs"(%x) : (tensor<2x8x!quant.uniform<i8:f32, 0.007842489518225193:-1>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.003921543247997761:-128>>
  return %y : tensor<2x8x!quant.uniform<i8:f32, 0.003921543247997761:-128>>
}

// minimum of operands quantized as its result: the minimum of the stored integers, widened to i32 by
// RESCALEs by 1 (no zero points) that Vela fuses into the MINIMUM, not common-unit RESCALEs
// CHECK-LABEL: sym_name = "minimum_one_quantization"
// CHECK-DAG: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// CHECK-DAG: %[[S:.*]] = "tosa.const"() <{values = dense<30> : tensor<1xi8>}>
// CHECK: %[[A:.*]] = "tosa.rescale"(%arg0, %[[M]], %[[S]], {{.*}}) -> tensor<2x8xi32>
// CHECK: %[[B:.*]] = "tosa.rescale"(%arg1, %[[M]], %[[S]], {{.*}}) -> tensor<2x8xi32>
// CHECK: %[[Y:.*]] = "tosa.minimum"(%[[A]], %[[B]])
// CHECK: %[[Z:.*]] = "tosa.rescale"(%[[Y]], %[[M]], %[[S]], {{.*}}) -> tensor<2x8xi8>
// CHECK: "func.return"(%[[Z]])
func.func @minimum_one_quantization(%a: tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>>, %b: tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>> {
  %y = "nn.minimum"(%a, %b) : (tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>>, tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>>) -> tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>>
  return %y : tensor<2x8x!quant.uniform<i8:f32, 0.0058:42>>
}
