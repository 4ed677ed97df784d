// --target: where one form suits Ethos-U85 and another U55/U65 (lowering/npu_target.py). TFLite's
// align-corners bilinear resize by an integer factor k (here 8 -> 15 rows, 8 -> 8 columns):
// RESIZE and TFLite's rounding as shifts without a preset; for ethos-u85 one RESIZE of every scale term
// doubled (4 2 down the rows, 2 2 along the columns: the same samples, weights 4 times as large) and one
// RESCALE by 2**29 >> 32 with DOUBLE_ROUND, whose sign-dependent rounding term (+-2**30, a quarter of an
// output step) rounds the halves of the sum over k_y * k_x = 2 away from zero, and which Vela fuses into
// the RESIZE; for ethos-u55 and ethos-u65, which Vela gives no such
// RESIZE, the input spread by k (a TRANSPOSE_CONV2D of identity 1x1 weights, stride 2 x 1, and a RESCALE
// by 1), then a DEPTHWISE_CONV2D of the triangle k - |t| (1 2 1 down the rows, 1 along the columns),
// padded by k - 1, whose sum in units of k_y * k_x = 2 one RESCALE divides by, its multiplier
// 2**30 + 1 >> 31 just above 1/2 so that halves round away from zero as TFLite's do.
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=RESIZE
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=DOUBLE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=CONV
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=CONV

// RESIZE: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[2, 1, 1, 1]> : tensor<4xindex>}>
// RESIZE: "tosa.resize"(%arg{{[0-9]+}}, %[[S]], {{.*}}) <{mode = #tosa.resize_mode<BILINEAR>}> : {{.*}} -> tensor<1x15x8x2xi32>
// RESIZE-NOT: "tosa.transpose_conv2d"
// RESIZE: "tosa.arithmetic_right_shift"

// DOUBLE: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[4, 2, 2, 2]> : tensor<4xindex>}>
// DOUBLE: %[[ACC:.*]] = "tosa.resize"(%arg{{[0-9]+}}, %[[S]], {{.*}}) <{mode = #tosa.resize_mode<BILINEAR>}> : {{.*}} -> tensor<1x15x8x2xi32>
// DOUBLE: %[[M:.*]] = "tosa.const"() <{values = dense<536870912> : tensor<1xi32>}>
// DOUBLE: %[[SH:.*]] = "tosa.const"() <{values = dense<32> : tensor<1xi8>}>
// DOUBLE: %[[Y:.*]] = "tosa.rescale"(%[[ACC]], %[[M]], %[[SH]], {{.*}}) <{{.*}}rounding_mode = #tosa.rounding_mode<DOUBLE_ROUND>{{.*}} -> tensor<1x15x8x2xi8>
// DOUBLE-NOT: "tosa.arithmetic_right_shift"
// DOUBLE: "func.return"(%[[Y]])

// CONV-NOT: "tosa.resize"
// CONV: %[[I:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 0]]], {{\[\[\[}}0, 1]]]]> : tensor<2x1x1x2xi8>}>
// CONV: %[[S:.*]] = "tosa.transpose_conv2d"(%arg{{[0-9]+}}, %[[I]], {{.*}}) <{acc_type = i32, out_pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 1>}> : {{.*}} -> tensor<1x15x8x2xi32>
// CONV: %[[X:.*]] = "tosa.rescale"(%[[S]], {{.*}}) -> tensor<1x15x8x2xi8>
// CONV: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1], [1]]], {{\[\[\[}}2], [2]]], {{\[\[\[}}1], [1]]]]> : tensor<3x1x2x1xi8>}>
// CONV: %[[ACC:.*]] = "tosa.depthwise_conv2d"(%[[X]], %[[W]], {{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 1, 1, 0, 0>, stride = array<i64: 1, 1>}> : {{.*}} -> tensor<1x15x8x2xi32>
// CONV: %[[M:.*]] = "tosa.const"() <{values = dense<1073741825> : tensor<1xi32>}>
// CONV: %[[SH:.*]] = "tosa.const"() <{values = dense<31> : tensor<1xi8>}>
// CONV: "tosa.rescale"(%[[ACC]], %[[M]], %[[SH]], {{.*}}) <{{.*}}rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>{{.*}} -> tensor<1x15x8x2xi8>
// CONV-NOT: "tosa.resize"
// CONV-NOT: "tosa.arithmetic_right_shift"
func.func @resize_align(%x: tensor<1x8x8x2x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x15x8x2x!quant.uniform<i8:f32, 0.0078:-1>> {
  %y = "nn.resize"(%x) {size = array<i64: 15, 8>, mode = "bilinear", align_corners = true, half_pixel_centers = false} : (tensor<1x8x8x2x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x15x8x2x!quant.uniform<i8:f32, 0.0078:-1>>
  return %y : tensor<1x15x8x2x!quant.uniform<i8:f32, 0.0078:-1>>
}
