// --target: where one form suits Ethos-U85 and another U55/U65 (lowering/npu_target.py). TFLite's
// align-corners bilinear resize by an integer factor k (here 8 -> 15 rows, 8 -> 8 columns):
// RESIZE without a preset and for ethos-u85; for ethos-u55 and ethos-u65, which Vela gives no such
// RESIZE, a TRANSPOSE_CONV2D of stride k whose diagonal weights are the triangle k - |t| (1 2 1 down
// the rows, 1 along the columns), cropped by k - 1 at both ends through out_pad. Both sums are in
// units of k_y * k_x = 2 and round alike.
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=RESIZE
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=RESIZE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=CONV
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=CONV

// RESIZE: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[2, 1, 1, 1]> : tensor<4xindex>}>
// RESIZE: "tosa.resize"(%arg{{[0-9]+}}, %[[S]], {{.*}}) <{mode = #tosa.resize_mode<BILINEAR>}> : {{.*}} -> tensor<1x15x8x2xi32>
// RESIZE-NOT: "tosa.transpose_conv2d"

// CONV-NOT: "tosa.resize"
// CONV: %[[W:.*]] = "tosa.const"() <{values = dense<{{\[\[\[\[}}1, 0]], {{\[\[}}2, 0]], {{\[\[}}1, 0]]], {{\[\[\[}}0, 1]], {{\[\[}}0, 2]], {{\[\[}}0, 1]]]]> : tensor<2x3x1x2xi8>}>
// CONV: %[[ACC:.*]] = "tosa.transpose_conv2d"(%arg{{[0-9]+}}, %[[W]], {{.*}}) <{acc_type = i32, out_pad = array<i64: -1, -1, 0, 0>, stride = array<i64: 2, 1>}> : {{.*}} -> tensor<1x15x8x2xi32>
// CONV: "tosa.arithmetic_right_shift"(%{{.*}}) <{round = true}>
// CONV-NOT: "tosa.resize"
func.func @resize_align(%x: tensor<1x8x8x2x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x15x8x2x!quant.uniform<i8:f32, 0.0078:-1>> {
  %y = "nn.resize"(%x) {size = array<i64: 15, 8>, mode = "bilinear", align_corners = true, half_pixel_centers = false} : (tensor<1x8x8x2x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x15x8x2x!quant.uniform<i8:f32, 0.0078:-1>>
  return %y : tensor<1x15x8x2x!quant.uniform<i8:f32, 0.0078:-1>>
}
