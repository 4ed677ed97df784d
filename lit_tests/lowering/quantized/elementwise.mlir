// CpuRef's integers (--semantics cpuref); TFLite's, the default, are litert.mlir's
// RUN: %nn2tosa opt %s --semantics cpuref --passes=lower-to-tosa,cse,dce | %FileCheck %s

// add: each operand RESCALEd to i32 on one unit (s_y * 2**-p; here p = 20: 0.5 -> 2**19, i.e.
// multiplier 2**30 with shift 11), added, and one RESCALE by 2**-20 adds the output zero point.
// CHECK-LABEL: sym_name = "add_common_scale"
// CHECK: %[[ONE:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// CHECK: %[[SA:.*]] = "tosa.const"() <{values = dense<10> : tensor<1xi8>}>
// CHECK: %[[ZA:.*]] = "tosa.const"() <{values = dense<1> : tensor<1xi8>}>
// CHECK: %[[A:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %[[ONE]], %[[SA]], %[[ZA]], {{.*}}) -> tensor<2x3xi32>
// CHECK: %[[SB:.*]] = "tosa.const"() <{values = dense<11> : tensor<1xi8>}>
// CHECK: %[[ZB:.*]] = "tosa.const"() <{values = dense<-2> : tensor<1xi8>}>
// CHECK: %[[B:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, %[[ONE]], %[[SB]], %[[ZB]], {{.*}}) -> tensor<3xi32>
// CHECK: %[[B2:.*]] = "tosa.reshape"(%[[B]], %{{.*}}) : {{.*}} -> tensor<1x3xi32>
// CHECK: %[[SUM:.*]] = "tosa.add"(%[[A]], %[[B2]])
// 0.5 and 0.25 land exactly on the unit, so exact halves occur: rounded away from zero (see conv.mlir)
// CHECK: %[[ABS:.*]] = "tosa.abs"(%[[SUM]])
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<51> : tensor<1xi8>}>
// CHECK: %[[MAG:.*]] = "tosa.rescale"(%[[ABS]], %[[ONE]], %[[S]], {{.*}}) -> tensor<2x3xi32>
// CHECK: "tosa.select"
// CHECK: %[[ZY:.*]] = "tosa.const"() <{values = dense<3> : tensor<1xi8>}>
// CHECK: "tosa.rescale"({{.*}}, %[[ZY]]) {{.*}} -> tensor<2x3xi8>
func.func @add_common_scale(%a: tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, %b: tensor<3x!quant.uniform<i8:f32, 0.25:-2>>) -> tensor<2x3x!quant.uniform<i8:f32, 1.0:3>> {
  %y = "nn.add"(%a, %b) : (tensor<2x3x!quant.uniform<i8:f32, 0.5:1>>, tensor<3x!quant.uniform<i8:f32, 0.25:-2>>) -> tensor<2x3x!quant.uniform<i8:f32, 1.0:3>>
  return %y : tensor<2x3x!quant.uniform<i8:f32, 1.0:3>>
}

// mul: (a - zpa) * (b - zpb) exactly in i32, one RESCALE by sa * sb / sy (0.5: no exact halves
// with this multiplier's bits, so a single RESCALE rounds).
// CHECK-LABEL: sym_name = "mul"
// CHECK: %[[A:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}) -> tensor<4xi32>
// CHECK: %[[B:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}) -> tensor<4xi32>
// CHECK: %[[P:.*]] = "tosa.mul"(%[[A]], %[[B]], %{{.*}}) : {{.*}} -> tensor<4xi32>
// CHECK: "tosa.rescale"(%[[P]], {{.*}}) -> tensor<4xi16>
func.func @mul(%a: tensor<4x!quant.uniform<i16:f32, 0.001>>, %b: tensor<4x!quant.uniform<i16:f32, 0.002>>) -> tensor<4x!quant.uniform<i16:f32, 0.004>> {
  %y = "nn.mul"(%a, %b) : (tensor<4x!quant.uniform<i16:f32, 0.001>>, tensor<4x!quant.uniform<i16:f32, 0.002>>) -> tensor<4x!quant.uniform<i16:f32, 0.004>>
  return %y : tensor<4x!quant.uniform<i16:f32, 0.004>>
}

// add with scales that do not land exactly on the unit: no exact halves, one RESCALE out
// CHECK-LABEL: sym_name = "add_plain"
// CHECK: %[[SUM:.*]] = "tosa.add"
// CHECK-NOT: "tosa.abs"
// CHECK: "tosa.rescale"(%[[SUM]], {{.*}}) -> tensor<4xi8>
// CHECK-NEXT: "func.return"
func.func @add_plain(%a: tensor<4x!quant.uniform<i8:f32, 0.3:1>>, %b: tensor<4x!quant.uniform<i8:f32, 0.7:-2>>) -> tensor<4x!quant.uniform<i8:f32, 1.1:3>> {
  %y = "nn.add"(%a, %b) : (tensor<4x!quant.uniform<i8:f32, 0.3:1>>, tensor<4x!quant.uniform<i8:f32, 0.7:-2>>) -> tensor<4x!quant.uniform<i8:f32, 1.1:3>>
  return %y : tensor<4x!quant.uniform<i8:f32, 1.1:3>>
}

// operands quantized alike compare their carried integers (as i32: TOSA compares i32 only)
// CHECK-LABEL: sym_name = "less_same_quantization"
// CHECK: %[[A:.*]] = "tosa.cast"(%{{.*}}) : (tensor<4xi8>) -> tensor<4xi32>
// CHECK: %[[B:.*]] = "tosa.cast"(%{{.*}}) : (tensor<4xi8>) -> tensor<4xi32>
// CHECK: "tosa.greater"(%[[B]], %[[A]])
func.func @less_same_quantization(%a: tensor<4x!quant.uniform<u8:f32, 0.5:128>>, %b: tensor<4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<4xi1> {
  %y = "nn.less"(%a, %b) : (tensor<4x!quant.uniform<u8:f32, 0.5:128>>, tensor<4x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<4xi1>
  return %y : tensor<4xi1>
}

// concat: an operand quantized unlike the result is requantized first (exact table for i8)
// CHECK-LABEL: sym_name = "concat_requantizes"
// CHECK: %[[T:.*]] = "tosa.table"(%arg{{[0-9]+}}, %{{.*}})
// CHECK: "tosa.concat"(%[[T]], %arg{{[0-9]+}}) <{axis = 1 : i32}>
func.func @concat_requantizes(%a: tensor<2x2x!quant.uniform<i8:f32, 0.5>>, %b: tensor<2x2x!quant.uniform<i8:f32, 0.25>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.25>> {
  %y = "nn.concat"(%a, %b) {axis = 1 : i64} : (tensor<2x2x!quant.uniform<i8:f32, 0.5>>, tensor<2x2x!quant.uniform<i8:f32, 0.25>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.25>>
  return %y : tensor<2x4x!quant.uniform<i8:f32, 0.25>>
}

// constant pad: the real pad value 2.0 encoded in the tensor's quantization (2.0 / 0.5 - 3 = 1)
// CHECK-LABEL: sym_name = "pad_value"
// CHECK: %[[V:.*]] = "tosa.const"() <{values = dense<1> : tensor<1xi8>}>
// CHECK: "tosa.pad"(%arg{{[0-9]+}}, %{{.*}}, %[[V]])
func.func @pad_value(%x: tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.5:-3>> {
  %y = "nn.pad"(%x) {pads = array<i64: 0, 0, 1, 1>, mode = "constant", value = 2.0 : f64} : (tensor<2x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<2x4x!quant.uniform<i8:f32, 0.5:-3>>
  return %y : tensor<2x4x!quant.uniform<i8:f32, 0.5:-3>>
}
