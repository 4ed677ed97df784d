// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// nn samples src = (o * d + offset) / n exactly; RESIZE takes scale [n, d], that offset and the
// border making its output size formula give nn's size.
// Half-pixel bilinear 4x5 -> 8x10: src = (o + 1/2) / 2 - 1/2 = (o - 1/2) / 2: scale [4, 2] offset -1
// border 1 (both axes).
// CHECK-LABEL: sym_name = "bilinear_half_pixel"
// CHECK-DAG: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[4, 2, 4, 2]> : tensor<4xindex>}>
// CHECK-DAG: %[[O:.*]] = "tosa.const_shape"() <{values = dense<-1> : tensor<2xindex>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const_shape"() <{values = dense<1> : tensor<2xindex>}>
// CHECK: %[[Y:.*]] = "tosa.resize"(%{{.*}}, %[[S]], %[[O]], %[[B]]) <{mode = #tosa.resize_mode<BILINEAR>}> : (tensor<1x4x5x3xf32>, !tosa.shape<4>, !tosa.shape<2>, !tosa.shape<2>) -> tensor<1x8x10x3xf32>
// CHECK-NEXT: "func.return"(%[[Y]])
func.func @bilinear_half_pixel(%x: tensor<1x4x5x3xf32>) -> tensor<1x8x10x3xf32> {
  %y = "nn.resize"(%x) {size = array<i64: 8, 10>, mode = "bilinear", align_corners = false, half_pixel_centers = true} : (tensor<1x4x5x3xf32>) -> tensor<1x8x10x3xf32>
  return %y : tensor<1x8x10x3xf32>
}

// align_corners 3 -> 7 (src = o * 2/6 = o / 3) and a non-integer downscale 7 -> 4 (src = o * 6/3 = 2o).
// CHECK-LABEL: sym_name = "align_corners"
// CHECK-DAG: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[3, 1, 1, 2]> : tensor<4xindex>}>
// CHECK-DAG: %[[O:.*]] = "tosa.const_shape"() <{values = dense<0> : tensor<2xindex>}>
// CHECK: "tosa.resize"(%{{.*}}, %[[S]], %[[O]], %[[O]]) <{mode = #tosa.resize_mode<BILINEAR>}> {{.*}} -> tensor<1x7x4x1xf16>
func.func @align_corners(%x: tensor<1x3x7x1xf16>) -> tensor<1x7x4x1xf16> {
  %y = "nn.resize"(%x) {size = array<i64: 7, 4>, mode = "bilinear", align_corners = true, half_pixel_centers = false} : (tensor<1x3x7x1xf16>) -> tensor<1x7x4x1xf16>
  return %y : tensor<1x7x4x1xf16>
}

// Nearest with floor rounding (Arm NN / PyTorch plain nearest) 2x: floor(o / 2) is half-up of
// o / 2 - 1/2: scale [2, 1] offset -1, border 0; RESIZE rounds half up as nn's default does.
// CHECK-LABEL: sym_name = "nearest_floor"
// CHECK-DAG: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[2, 1, 2, 1]> : tensor<4xindex>}>
// CHECK-DAG: %[[O:.*]] = "tosa.const_shape"() <{values = dense<-1> : tensor<2xindex>}>
// CHECK-DAG: %[[B:.*]] = "tosa.const_shape"() <{values = dense<0> : tensor<2xindex>}>
// CHECK: "tosa.resize"(%{{.*}}, %[[S]], %[[O]], %[[B]]) <{mode = #tosa.resize_mode<NEAREST_NEIGHBOR>}> : (tensor<1x3x3x2xi8>, {{.*}}) -> tensor<1x6x6x2xi8>
func.func @nearest_floor(%x: tensor<1x3x3x2xi8>) -> tensor<1x6x6x2xi8> {
  %y = "nn.resize"(%x) {size = array<i64: 6, 6>, mode = "nearest", align_corners = false, half_pixel_centers = false, nearest_rounding = "floor"} : (tensor<1x3x3x2xi8>) -> tensor<1x6x6x2xi8>
  return %y : tensor<1x6x6x2xi8>
}

// Beyond RESIZE (a 40 -> 2 downscale: d >= 16 n): per axis, GATHER of the two neighbours of each
// source row (indices computed here) weighed by constants; width first (3 -> 5 on [N, W, H*C]),
// then height (on [N, H, W*C]: rows 0 and 20, and their neighbours 1 and 21, weights 1 and 0).
// CHECK-LABEL: sym_name = "decomposed"
// CHECK-NOT: "tosa.resize"
// CHECK: "tosa.transpose"(%{{.*}}) <{perms = array<i32: 0, 2, 1, 3>}> : (tensor<1x40x3x1xf32>) -> tensor<1x3x40x1xf32>
// CHECK: dense<{{\[\[}}0, 0, 1, 1, 2]]> : tensor<1x5xi32>
// CHECK: "tosa.gather"({{.*}}) : (tensor<1x3x40xf32>, tensor<1x5xi32>) -> tensor<1x5x40xf32>
// CHECK: dense<{{\[\[}}1, 1, 2, 2, 2]]> : tensor<1x5xi32>
// CHECK: "tosa.gather"({{.*}}) : (tensor<1x3x40xf32>, tensor<1x5xi32>) -> tensor<1x5x40xf32>
// CHECK: dense<{{\[\[\[}}1.000000e+00], [4.000000e-01], [8.000000e-01], [2.000000e-01], [6.000000e-01]]]> : tensor<1x5x1xf32>
// CHECK: "tosa.add"
// CHECK: "tosa.transpose"(%{{.*}}) <{perms = array<i32: 0, 2, 1, 3>}> : (tensor<1x5x40x1xf32>) -> tensor<1x40x5x1xf32>
// CHECK: dense<{{\[\[}}0, 20]]> : tensor<1x2xi32>
// CHECK: "tosa.gather"({{.*}}) : (tensor<1x40x5xf32>, tensor<1x2xi32>) -> tensor<1x2x5xf32>
// CHECK: dense<{{\[\[}}1, 21]]> : tensor<1x2xi32>
// CHECK: "tosa.gather"({{.*}}) : (tensor<1x40x5xf32>, tensor<1x2xi32>) -> tensor<1x2x5xf32>
// CHECK: "tosa.add"
// CHECK: "tosa.reshape"{{.*}} -> tensor<1x2x5x1xf32>
func.func @decomposed(%x: tensor<1x40x3x1xf32>) -> tensor<1x2x5x1xf32> {
  %y = "nn.resize"(%x) {size = array<i64: 2, 5>, mode = "bilinear", align_corners = false, half_pixel_centers = false} : (tensor<1x40x3x1xf32>) -> tensor<1x2x5x1xf32>
  return %y : tensor<1x2x5x1xf32>
}
