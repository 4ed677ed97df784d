// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// uint8 at the graph boundary keeps its bits in an i8 tensor: RESCALE input_unsigned (zero point
// 128, stored as its bits -128) makes the signed carrier q - 128 next to the input, RESCALE
// output_unsigned adds the 128 back next to the output.
// CHECK-LABEL: sym_name = "uint8_in_out"
// CHECK: ^bb0(%arg0: tensor<2x3xi8>
// CHECK: %[[ONE:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// CHECK: %[[SHIFT:.*]] = "tosa.const"() <{values = dense<30> : tensor<1xi8>}>
// CHECK: %[[U128:.*]] = "tosa.const"() <{values = dense<-128> : tensor<1xi8>}>
// CHECK: %[[ZERO:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK: %[[S:.*]] = "tosa.rescale"(%arg0, %[[ONE]], %[[SHIFT]], %[[U128]], %[[ZERO]]) <{input_unsigned = true, output_unsigned = false
// requantizing i8 data by 1/2 is one RESCALE (2**30 >> 31), which gives TFLite's integers for all
// 256 inputs (checked at lowering); the results need no CLAMP
// CHECK: %[[HALF:.*]] = "tosa.const"() <{values = dense<31> : tensor<1xi8>}>
// CHECK: %[[Y:.*]] = "tosa.rescale"(%[[S]], %[[ONE]], %[[HALF]], %[[ZERO]], %[[ZERO]])
// CHECK-NOT: "tosa.clamp"
// CHECK-NOT: "tosa.table"
// CHECK: %[[R:.*]] = "tosa.rescale"(%[[Y]], %[[ONE]], %[[SHIFT]], %[[ZERO]], %[[U128]]) <{input_unsigned = false, output_unsigned = true
// CHECK: "func.return"(%[[R]])
// (the conversion report lists both boundary changes: lower-to-tosa leaves them in its pass context's
// remarks, not in the graph's attributes; tests/test_report.py)
// CHECK-NOT: boundary_changes
func.func @uint8_in_out(%x: tensor<2x3x!quant.uniform<u8:f32, 1.0:128>>) -> tensor<2x3x!quant.uniform<u8:f32, 2.0:128>> {
  %y = "nn.requantize"(%x) : (tensor<2x3x!quant.uniform<u8:f32, 1.0:128>>) -> tensor<2x3x!quant.uniform<u8:f32, 2.0:128>>
  return %y : tensor<2x3x!quant.uniform<u8:f32, 2.0:128>>
}

// A uint8 constant is carried like the data: its stored values minus 128.
// CHECK-LABEL: sym_name = "uint8_constant"
// CHECK: "tosa.const"() <{values = dense<[-128, 0, 127]> : tensor<3xi8>}>
func.func @uint8_constant() -> tensor<3x!quant.uniform<i8:f32, 0.5:-28>> {
  %c = "nn.constant"() {value = dense<[0, 128, 255]> : tensor<3xui8>} : () -> tensor<3x!quant.uniform<u8:f32, 0.5:100>>
  %y = "nn.requantize"(%c) : (tensor<3x!quant.uniform<u8:f32, 0.5:100>>) -> tensor<3x!quant.uniform<i8:f32, 0.5:-28>>
  return %y : tensor<3x!quant.uniform<i8:f32, 0.5:-28>>
}
