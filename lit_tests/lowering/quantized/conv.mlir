// RUN: %nn2tosa opt %s --semantics cpuref --passes=lower-to-tosa,cse,dce | %FileCheck %s

// conv2d: the i8 convolution with both zero points, i32 accumulator; the bias is already in
// accumulator units (s_x * s_w[c]); per-channel RESCALE by s_x * s_w[c] / s_y = 0.25 and 0.125.
// Those scales make exact halves possible: |acc| is rescaled (half up is half away from zero for
// non-negative values), the sign put back, then a RESCALE by 1 adds the zero point: Arm NN's rounding
// (--semantics cpuref: CpuRef's integers).
// CHECK-LABEL: sym_name = "conv2d_per_channel"
// CHECK: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, -2]]], {{\[\[\[}}3, 4]]]]> : tensor<2x1x1x2xi8>}>
// CHECK: %[[B:.*]] = "tosa.const"() <{values = dense<[10, -20]> : tensor<2xi32>}>
// CHECK: %[[XZP:.*]] = "tosa.const"() <{values = dense<-3> : tensor<1xi8>}>
// CHECK: %[[WZP:.*]] = "tosa.const"() <{values = dense<0> : tensor<1xi8>}>
// CHECK: %[[ACC:.*]] = "tosa.conv2d"(%{{.*}}, %[[W]], %[[B]], %[[XZP]], %[[WZP]]) <{acc_type = i32
// CHECK: %[[ABS:.*]] = "tosa.abs"(%[[ACC]])
// CHECK: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<2xi32>}>
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<[32, 33]> : tensor<2xi8>}>
// CHECK: %[[MAG:.*]] = "tosa.rescale"(%[[ABS]], %[[M]], %[[S]], {{.*}}per_channel = true, rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>, scale32 = true}>
// CHECK: %[[NEG:.*]] = "tosa.greater"(%{{.*}}, %[[ACC]])
// CHECK: %[[MINUS:.*]] = "tosa.negate"(%[[MAG]],
// CHECK: %[[SIGNED:.*]] = "tosa.select"(%[[NEG]], %[[MINUS]], %[[MAG]])
// CHECK: %[[YZP:.*]] = "tosa.const"() <{values = dense<5> : tensor<1xi8>}>
// CHECK: "tosa.rescale"(%[[SIGNED]], {{.*}}, %[[YZP]]) {{.*}} -> tensor<1x4x4x2xi8>
func.func @conv2d_per_channel(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>> {
  %w = "nn.constant"() {value = dense<[[[[1, -2]]], [[[3, 4]]]]> : tensor<2x1x1x2xi8>} : () -> tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.125,0.0625}>>
  %b = "nn.constant"() {value = dense<[10, -20]> : tensor<2xi32>} : () -> tensor<2x!quant.uniform<i32:f32:0, {0.0625,0.03125}>>
  %y = "nn.conv2d"(%x, %w, %b) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5:-3>>, tensor<2x1x1x2x!quant.uniform<i8:f32:0, {0.125,0.0625}>>, tensor<2x!quant.uniform<i32:f32:0, {0.0625,0.03125}>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
  return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.25:5>>
}

// i16 weights: 300 = 256 * 1 + 44, two i16 x i8 convolutions (i48 accumulators): the high byte 1,
// and the low byte 44 stored as 44 - 128 = -84 with weight zero point -128. Each accumulator goes
// to i32 with a 16-bit multiplier (x 256 and x 1, exact), their sum to the output with 32 bits.
// CHECK-LABEL: sym_name = "conv2d_int16_weights"
// CHECK: %[[HI:.*]] = "tosa.const"() <{values = dense<1> : tensor<1x1x1x1xi8>}>
// CHECK: %[[ACC_HI:.*]] = "tosa.conv2d"(%{{.*}}, %[[HI]], {{.*}}) <{acc_type = i48
// CHECK: %[[MUL16:.*]] = "tosa.const"() <{values = dense<16384> : tensor<1xi16>}>
// CHECK: %[[SH6:.*]] = "tosa.const"() <{values = dense<6> : tensor<1xi8>}>
// CHECK: %[[UP:.*]] = "tosa.rescale"(%[[ACC_HI]], %[[MUL16]], %[[SH6]], {{.*}}scale32 = false}> : ({{.*}}xi48>, {{.*}}) -> tensor<1x3x3x1xi32>
// CHECK: %[[LO:.*]] = "tosa.const"() <{values = dense<-84> : tensor<1x1x1x1xi8>}>
// CHECK: %[[LOZP:.*]] = "tosa.const"() <{values = dense<-128> : tensor<1xi8>}>
// CHECK: %[[ACC_LO:.*]] = "tosa.conv2d"(%{{.*}}, %[[LO]], %{{.*}}, %{{.*}}, %[[LOZP]]) <{acc_type = i48
// CHECK: %[[SH14:.*]] = "tosa.const"() <{values = dense<14> : tensor<1xi8>}>
// CHECK: %[[LOW:.*]] = "tosa.rescale"(%[[ACC_LO]], %[[MUL16]], %[[SH14]], {{.*}}scale32 = false}>
// CHECK: %[[SUM:.*]] = "tosa.add"(%[[UP]], %[[LOW]])
// CHECK: "tosa.rescale"(%[[SUM]], {{.*}}scale32 = true}> : (tensor<1x3x3x1xi32>, {{.*}}) -> tensor<1x3x3x1xi16>
func.func @conv2d_int16_weights(%x: tensor<1x3x3x1x!quant.uniform<i16:f32, 0.001>>) -> tensor<1x3x3x1x!quant.uniform<i16:f32, 0.01>> {
  %w = "nn.constant"() {value = dense<[[[[300]]]]> : tensor<1x1x1x1xi16>} : () -> tensor<1x1x1x1x!quant.uniform<i16:f32, 0.002>>
  %y = "nn.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x3x3x1x!quant.uniform<i16:f32, 0.001>>, tensor<1x1x1x1x!quant.uniform<i16:f32, 0.002>>) -> tensor<1x3x3x1x!quant.uniform<i16:f32, 0.01>>
  return %y : tensor<1x3x3x1x!quant.uniform<i16:f32, 0.01>>
}

// fully_connected: a 1x1 conv2d; uint8 weights are carried as stored - 128 (zero point 128 - 128 = 0).
// CHECK-LABEL: sym_name = "fully_connected_uint8"
// CHECK: %[[X:.*]] = "tosa.rescale"(%arg{{[0-9]+}}, {{.*}}input_unsigned = true
// CHECK: %[[X4:.*]] = "tosa.reshape"(%[[X]], %{{.*}}) : {{.*}} -> tensor<2x1x1x3xi8>
// CHECK: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}-128, 0, 127]]], {{\[\[\[}}-118, -108, -98]]]]> : tensor<2x1x1x3xi8>}>
// CHECK: %[[ACC:.*]] = "tosa.conv2d"(%[[X4]], %[[W]], {{.*}}) <{acc_type = i32
// CHECK: "tosa.abs"(%[[ACC]])
// CHECK: "tosa.rescale"({{.*}}output_unsigned = true
func.func @fully_connected_uint8(%x: tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>) -> tensor<2x2x!quant.uniform<u8:f32, 1.0:100>> {
  %w = "nn.constant"() {value = dense<[[0, 128, 255], [10, 20, 30]]> : tensor<2x3xui8>} : () -> tensor<2x3x!quant.uniform<u8:f32, 0.25:128>>
  %y = "nn.fully_connected"(%x, %w) : (tensor<2x3x!quant.uniform<u8:f32, 0.5:128>>, tensor<2x3x!quant.uniform<u8:f32, 0.25:128>>) -> tensor<2x2x!quant.uniform<u8:f32, 1.0:100>>
  return %y : tensor<2x2x!quant.uniform<u8:f32, 1.0:100>>
}

// matmul of two runtime tensors: TOSA MATMUL with both zero points, one RESCALE by 0.5*0.25/0.75.
// CHECK-LABEL: sym_name = "matmul_int8"
// CHECK: %[[AZP:.*]] = "tosa.const"() <{values = dense<2> : tensor<1xi8>}>
// CHECK: %[[BZP:.*]] = "tosa.const"() <{values = dense<-1> : tensor<1xi8>}>
// CHECK: %[[ACC:.*]] = "tosa.matmul"(%arg{{[0-9]+}}, %arg{{[0-9]+}}, %[[AZP]], %[[BZP]]) : {{.*}} -> tensor<2x3x5xi32>
// CHECK: %[[M:.*]] = "tosa.const"() <{values = dense<1431655765> : tensor<1xi32>}>
// CHECK: %[[S:.*]] = "tosa.const"() <{values = dense<33> : tensor<1xi8>}>
// CHECK: "tosa.rescale"(%[[ACC]], %[[M]], %[[S]],
func.func @matmul_int8(%a: tensor<2x3x4x!quant.uniform<i8:f32, 0.5:2>>, %b: tensor<2x4x5x!quant.uniform<i8:f32, 0.25:-1>>) -> tensor<2x3x5x!quant.uniform<i8:f32, 0.75:0>> {
  %y = "nn.matmul"(%a, %b) : (tensor<2x3x4x!quant.uniform<i8:f32, 0.5:2>>, tensor<2x4x5x!quant.uniform<i8:f32, 0.25:-1>>) -> tensor<2x3x5x!quant.uniform<i8:f32, 0.75:0>>
  return %y : tensor<2x3x5x!quant.uniform<i8:f32, 0.75:0>>
}

// depthwise_conv2d: padding reads the zero point (real 0), as Arm NN pads.
// CHECK-LABEL: sym_name = "depthwise"
// CHECK: %[[ACC:.*]] = "tosa.depthwise_conv2d"({{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>
// CHECK: %[[M:.*]] = "tosa.const"() <{values = dense<1717986918> : tensor<1xi32>}>
// CHECK: "tosa.rescale"(%[[ACC]], %[[M]], {{.*}}per_channel = false
func.func @depthwise(%x: tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>> {
  %w = "nn.constant"() {value = dense<1> : tensor<3x3x2x1xi8>} : () -> tensor<3x3x2x1x!quant.uniform<i8:f32, 0.1>>
  %y = "nn.depthwise_conv2d"(%x, %w) {dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>, tensor<3x3x2x1x!quant.uniform<i8:f32, 0.1>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>
  return %y : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.5>>
}
