// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Quantized resizes under the default (LiteRT) semantics compute TFLite's integer kernels.

// Bilinear, half-pixel 8x8 -> 13x11 (int8, one quantization): TFLite's ratios in 1/1024ths,
// round(8192 / 13) = 630 and round(8192 / 11) = 745, offsets 630 // 2 - 512 = -197 and -140; the
// borders give RESIZE's output size. The i32 sum of the stored integers over 2**20 is rounded half
// away from zero: acc + (acc >> 31) (one less where negative), then a rounding shift by 20.
// CHECK-LABEL: sym_name = "bilinear_half_pixel"
// CHECK-DAG: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[1024, 630, 1024, 745]> : tensor<4xindex>}>
// CHECK-DAG: %[[O:.*]] = "tosa.const_shape"() <{values = dense<[-197, -140]> : tensor<2xindex>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const_shape"() <{values = dense<[195, 142]> : tensor<2xindex>}>
// CHECK: %[[ACC:.*]] = "tosa.resize"(%{{.*}}, %[[S]], %[[O]], %[[B]]) <{mode = #tosa.resize_mode<BILINEAR>}> : {{.*}} -> tensor<1x13x11x4xi32>
// CHECK: %[[C31:.*]] = "tosa.const"() <{values = dense<31> : tensor<1x1x1x1xi32>}>
// CHECK: %[[SIGN:.*]] = "tosa.arithmetic_right_shift"(%[[ACC]], %[[C31]]) <{round = false}>
// CHECK: %[[FIXED:.*]] = "tosa.add"(%[[ACC]], %[[SIGN]])
// CHECK: %[[C20:.*]] = "tosa.const"() <{values = dense<20> : tensor<1x1x1x1xi32>}>
// CHECK: %[[R:.*]] = "tosa.arithmetic_right_shift"(%[[FIXED]], %[[C20]]) <{round = true}>
// CHECK: %[[Y:.*]] = "tosa.cast"(%[[R]]) : (tensor<1x13x11x4xi32>) -> tensor<1x13x11x4xi8>
// CHECK-NEXT: "func.return"(%[[Y]])
func.func @bilinear_half_pixel(%x: tensor<1x8x8x4x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x13x11x4x!quant.uniform<i8:f32, 0.0078:-1>> {
  %y = "nn.resize"(%x) {size = array<i64: 13, 11>, mode = "bilinear", align_corners = false, half_pixel_centers = true} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.0078:-1>>) -> tensor<1x13x11x4x!quant.uniform<i8:f32, 0.0078:-1>>
  return %y : tensor<1x13x11x4x!quant.uniform<i8:f32, 0.0078:-1>>
}

// int16, align_corners 4 -> 7: ratio 512/1024 = 1/2 (scale [2, 1]); the i48 sum is only read by
// RESCALE, which rounds half up: the sum of ~x, rescaled and inverted again, is the sum rounded half
// down, chosen where it is negative.
// CHECK-LABEL: sym_name = "bilinear_i16"
// CHECK: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[2, 1, 2, 1]> : tensor<4xindex>}>
// CHECK: %[[ACC:.*]] = "tosa.resize"(%[[X:[^,]*]], %[[S]], {{.*}} -> tensor<1x7x7x1xi48>
// CHECK: %[[UP:.*]] = "tosa.rescale"(%[[ACC]], {{.*}}rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>{{.*}} -> tensor<1x7x7x1xi32>
// CHECK: %[[NOTX:.*]] = "tosa.bitwise_not"(%[[X]]) : (tensor<1x4x4x1xi16>)
// CHECK: %[[MACC:.*]] = "tosa.resize"(%[[NOTX]], %[[S]], {{.*}} -> tensor<1x7x7x1xi48>
// CHECK: %[[M:.*]] = "tosa.rescale"(%[[MACC]], {{.*}} -> tensor<1x7x7x1xi32>
// CHECK: %[[LOW:.*]] = "tosa.bitwise_not"(%[[M]])
// CHECK: %[[NEG:.*]] = "tosa.greater"(%{{.*}}, %[[LOW]])
// CHECK: %[[SEL:.*]] = "tosa.select"(%[[NEG]], %[[LOW]], %[[UP]])
// CHECK: "tosa.cast"(%[[SEL]]) : (tensor<1x7x7x1xi32>) -> tensor<1x7x7x1xi16>
func.func @bilinear_i16(%x: tensor<1x4x4x1x!quant.uniform<i16:f32, 0.001:0>>) -> tensor<1x7x7x1x!quant.uniform<i16:f32, 0.001:0>> {
  %y = "nn.resize"(%x) {size = array<i64: 7, 7>, mode = "bilinear", align_corners = true, half_pixel_centers = false} : (tensor<1x4x4x1x!quant.uniform<i16:f32, 0.001:0>>) -> tensor<1x7x7x1x!quant.uniform<i16:f32, 0.001:0>>
  return %y : tensor<1x7x7x1x!quant.uniform<i16:f32, 0.001:0>>
}

// Nearest 26 -> 22: TFLite's float32 floor(o * (26/22)) reads row 12 at o = 11, one short of the
// exact 13 (RESIZE would read 13): a GATHER of TFLite's rows.
// CHECK-LABEL: sym_name = "nearest_float32_rows"
// CHECK-NOT: "tosa.resize"
// CHECK: dense<{{\[\[}}0, 1, 2, 3, 4, 5, 7, 8, 9, 10, 11, 12, 14, 15, 16, 17, 18, 20, 21, 22, 23, 24]]> : tensor<1x22xi32>
// CHECK: "tosa.gather"
func.func @nearest_float32_rows(%x: tensor<1x26x1x1x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<1x22x1x1x!quant.uniform<i8:f32, 0.5:0>> {
  %y = "nn.resize"(%x) {size = array<i64: 22, 1>, mode = "nearest", align_corners = false, half_pixel_centers = false, nearest_rounding = "floor"} : (tensor<1x26x1x1x!quant.uniform<i8:f32, 0.5:0>>) -> tensor<1x22x1x1x!quant.uniform<i8:f32, 0.5:0>>
  return %y : tensor<1x22x1x1x!quant.uniform<i8:f32, 0.5:0>>
}
