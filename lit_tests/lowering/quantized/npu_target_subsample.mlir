// --target: ResNet's stride-2 1x1 convolutions of an even input (8 x 8 here), two of them reading one
// tensor as a block's main branch and shortcut do. TOSA needs the windows to tile the input exactly.
// Without a preset each convolution reads the input whole through a 1 x 2 kernel whose second column is
// the weight zero point (npu_shapes.mlir). Under every Ethos-U preset one DEPTHWISE_CONV2D of weight 1
// at the first tap (zero points 0) and a RESCALE by 1 (2**30 >> 30) subsample the input, once for both
// (cse), and the convolutions become 1x1 of stride 1 on the 4 x 4 subsample: Vela keeps both in its
// brick layout and reads a quarter of the input (lowering/npu_target.py, docs/vela.md).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=WIDE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SUB
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SUB
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=SUB

// WIDE-NOT: "tosa.depthwise_conv2d"
// WIDE: "tosa.conv2d"({{.*}}) <{{.*}}stride = array<i64: 2, 2>}> : (tensor<1x7x8x4xi8>, tensor<2x1x2x4xi8>, {{.*}}) -> tensor<1x4x4x2xi32>
// WIDE: "tosa.conv2d"({{.*}}) <{{.*}}stride = array<i64: 2, 2>}> : (tensor<1x7x8x4xi8>, tensor<3x1x2x4xi8>, {{.*}}) -> tensor<1x4x4x3xi32>
// WIDE-NOT: "tosa.depthwise_conv2d"

// SUB: %[[X:.*]] = "tosa.slice"(%arg{{[0-9]+}}, {{.*}}) : (tensor<1x8x8x4xi8>, {{.*}}) -> tensor<1x7x8x4xi8>
// SUB: %[[ONE:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1], [1], [1], [1]], {{\[\[}}0], [0], [0], [0]]]]> : tensor<1x2x4x1xi8>}>
// SUB: %[[PICK:.*]] = "tosa.depthwise_conv2d"(%[[X]], %[[ONE]], {{.*}}) <{{.*}}stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x4x4x4xi32>
// SUB: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// SUB: %[[S:.*]] = "tosa.const"() <{values = dense<30> : tensor<1xi8>}>
// SUB: %[[X4:.*]] = "tosa.rescale"(%[[PICK]], %[[M]], %[[S]], {{.*}}) -> tensor<1x4x4x4xi8>
// SUB: "tosa.conv2d"(%[[X4]], {{.*}}) <{{.*}}stride = array<i64: 1, 1>}> : (tensor<1x4x4x4xi8>, tensor<2x1x1x4xi8>, {{.*}}) -> tensor<1x4x4x2xi32>
// SUB-NOT: "tosa.depthwise_conv2d"
// SUB: "tosa.conv2d"(%[[X4]], {{.*}}) <{{.*}}stride = array<i64: 1, 1>}> : (tensor<1x4x4x4xi8>, tensor<3x1x1x4xi8>, {{.*}}) -> tensor<1x4x4x3xi32>
func.func @block_entry(%x: tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-128>>) -> (tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:3>>, tensor<1x4x4x3x!quant.uniform<i8:f32, 0.1:3>>) {
  %w = "nn.constant"() {value = dense<3> : tensor<2x1x1x4xi8>} : () -> tensor<2x1x1x4x!quant.uniform<i8:f32, 0.01>>
  %v = "nn.constant"() {value = dense<-5> : tensor<3x1x1x4xi8>} : () -> tensor<3x1x1x4x!quant.uniform<i8:f32, 0.01>>
  %y = "nn.conv2d"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-128>>, tensor<2x1x1x4x!quant.uniform<i8:f32, 0.01>>) -> tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:3>>
  %z = "nn.conv2d"(%x, %v) {dilation = array<i64: 1, 1>, groups = 1 : i64, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-128>>, tensor<3x1x1x4x!quant.uniform<i8:f32, 0.01>>) -> tensor<1x4x4x3x!quant.uniform<i8:f32, 0.1:3>>
  return %y, %z : tensor<1x4x4x2x!quant.uniform<i8:f32, 0.1:3>>, tensor<1x4x4x3x!quant.uniform<i8:f32, 0.1:3>>
}
