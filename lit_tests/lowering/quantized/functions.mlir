// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// a function of an i8 tensor is one exact 256-entry TABLE
// CHECK-LABEL: sym_name = "sigmoid_int8"
// CHECK: %[[T:.*]] = "tosa.const"() <{values = {{.*}} : tensor<256xi8>}>
// CHECK: "tosa.table"(%arg{{[0-9]+}}, %[[T]])
func.func @sigmoid_int8(%x: tensor<4x!quant.uniform<i8:f32, 0.05>>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>> {
  %y = "nn.sigmoid"(%x) : (tensor<4x!quant.uniform<i8:f32, 0.05>>) -> tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
  return %y : tensor<4x!quant.uniform<i8:f32, 0.00390625:-128>>
}

// of an i16 tensor: TOSA's interpolated TABLE misses tanh by a unit here and there at this scale. Under
// CpuRef's semantics the exact 65536-entry GATHER (index x + 32768) is used instead; under LiteRT's (the
// default) TFLite's int16 tanh kernel step by step (npu.mlir has its logistic): int8 TABLEs of its
// sigmoid table's bytes, no GATHER
// RUN: %nn2tosa opt %s --semantics cpuref --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=CPUREF
// CPUREF-LABEL: sym_name = "tanh_int16"
// CPUREF: %[[X:.*]] = "tosa.cast"(%arg{{[0-9]+}}) : (tensor<4xi16>) -> tensor<4xi32>
// CPUREF: %[[O:.*]] = "tosa.const"() <{values = dense<32768> : tensor<1xi32>}>
// CPUREF: %[[I:.*]] = "tosa.add"(%[[X]], %[[O]])
// CPUREF: %[[T:.*]] = "tosa.const"() <{values = {{.*}} : tensor<1x65536x1xi16>}>
// CPUREF: "tosa.gather"(%[[T]], %{{.*}}) : (tensor<1x65536x1xi16>, tensor<1x4xi32>) -> tensor<1x4x1xi16>
// CHECK-LABEL: sym_name = "tanh_int16"
// CHECK-COUNT-4: "tosa.table"({{.*}}) : (tensor<4xi8>, tensor<256xi8>) -> tensor<4xi8>
// CHECK-NOT: "tosa.gather"
// CHECK: "tosa.rescale"({{.*}}) -> tensor<4xi16>
func.func @tanh_int16(%x: tensor<4x!quant.uniform<i16:f32, 1.0E-4>>) -> tensor<4x!quant.uniform<i16:f32, 3.0517578125E-5>> {
  %y = "nn.tanh"(%x) : (tensor<4x!quant.uniform<i16:f32, 1.0E-4>>) -> tensor<4x!quant.uniform<i16:f32, 3.0517578125E-5>>
  return %y : tensor<4x!quant.uniform<i16:f32, 3.0517578125E-5>>
}

// piecewise-linear functions of i16 data are exact integer ops: relu6 is CLAMP to the encoded bounds
// CHECK-LABEL: sym_name = "relu6_int16"
// CHECK: "tosa.clamp"(%arg{{[0-9]+}}) <{max_val = 6000 : i16, min_val = 0 : i16
func.func @relu6_int16(%x: tensor<4x!quant.uniform<i16:f32, 1.0E-3>>) -> tensor<4x!quant.uniform<i16:f32, 1.0E-3>> {
  %y = "nn.clamp"(%x) {min = 0.0 : f64, max = 6.0 : f64} : (tensor<4x!quant.uniform<i16:f32, 1.0E-3>>) -> tensor<4x!quant.uniform<i16:f32, 1.0E-3>>
  return %y : tensor<4x!quant.uniform<i16:f32, 1.0E-3>>
}

// dequantize -> float elementwise ops -> quantize: one TABLE, no float op left
// CHECK-LABEL: sym_name = "island"
// CHECK-NOT: f32
// CHECK: "tosa.table"(%arg{{[0-9]+}}, %{{.*}})
// CHECK-NEXT: "func.return"
func.func @island(%x: tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4x!quant.uniform<i8:f32, 0.25>> {
  %r = "nn.dequantize"(%x) : (tensor<4x!quant.uniform<i8:f32, 0.5>>) -> tensor<4xf32>
  %c = "nn.constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %m = "nn.mul"(%r, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %e = "nn.exp"(%m) : (tensor<4xf32>) -> tensor<4xf32>
  %y = "nn.quantize"(%e) : (tensor<4xf32>) -> tensor<4x!quant.uniform<i8:f32, 0.25>>
  return %y : tensor<4x!quant.uniform<i8:f32, 0.25>>
}
