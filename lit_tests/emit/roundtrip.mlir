// RUN: %nn2tosa opt %s | %FileCheck %s
// RUN: %nn2tosa opt %s | %nn2tosa opt - | %FileCheck %s

// TOSA-level IR prints in MLIR's generic form with TOSA 1.0 attribute types: i64 arrays for
// conv geometry, a TypeAttr accumulator, enum attributes, i32 axis and transpose perms,
// clamp bounds typed like the input, shapes as !tosa.shape values.
// CHECK-LABEL: function_type = (tensor<1x4x4x2xi8>) -> tensor<1x1x4x4xi8>, res_attrs = {{.*}}, sym_name = "main"
// CHECK: "tosa.conv2d"(%arg0, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 0, 1>, stride = array<i64: 1, 1>}>
// CHECK-SAME: -> tensor<1x4x4x1xi32> loc(#[[CONV:loc[0-9]+]])
// CHECK: "tosa.rescale"({{.*}}) <{input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>, scale32 = true}>
// CHECK: "tosa.clamp"({{.*}}) <{max_val = 100 : i8, min_val = -3 : i8, nan_mode = #tosa.nan_mode<PROPAGATE>}>
// CHECK: "tosa.transpose"({{.*}}) <{perms = array<i32: 0, 3, 1, 2>}>
// CHECK: %[[S:.*]] = "tosa.const_shape"() <{values = dense<[1, 16, 2]> : tensor<3xindex>}> : () -> !tosa.shape<3>
// CHECK: "tosa.reshape"(%arg0, %[[S]]) : (tensor<1x4x4x2xi8>, !tosa.shape<3>) -> tensor<1x16x2xi8>
// CHECK: "tosa.reduce_max"({{.*}}) <{axis = 1 : i32, nan_mode = #tosa.nan_mode<PROPAGATE>}>
// CHECK: #[[CONV]] = loc("conv")
func.func @main(%x: tensor<1x4x4x2xi8>) -> tensor<1x1x4x4xi8> {
  %zp = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
  %zp32 = "tosa.const"() <{values = dense<0> : tensor<1xi32>}> : () -> tensor<1xi32>
  %w = "tosa.const"() <{values = dense<[[[[1, -2], [3, 4]], [[-5, 6], [7, -7]]]]> : tensor<1x2x2x2xi8>}> : () -> tensor<1x2x2x2xi8>
  %b = "tosa.const"() <{values = dense<5> : tensor<1xi32>}> : () -> tensor<1xi32>
  %m = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}> : () -> tensor<1xi32>
  %sh = "tosa.const"() <{values = dense<33> : tensor<1xi8>}> : () -> tensor<1xi8>
  %c = "tosa.conv2d"(%x, %w, %b, %zp, %zp) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 1, 0, 1>, stride = array<i64: 1, 1>}> : (tensor<1x4x4x2xi8>, tensor<1x2x2x2xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x1xi32> loc("conv")
  %r = "tosa.rescale"(%c, %m, %sh, %zp32, %zp) <{input_unsigned = false, output_unsigned = false, per_channel = false, rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>, scale32 = true}> : (tensor<1x4x4x1xi32>, tensor<1xi32>, tensor<1xi8>, tensor<1xi32>, tensor<1xi8>) -> tensor<1x4x4x1xi8>
  %k = "tosa.clamp"(%r) <{max_val = 100 : i8, min_val = -3 : i8}> : (tensor<1x4x4x1xi8>) -> tensor<1x4x4x1xi8>
  %t = "tosa.transpose"(%k) <{perms = array<i32: 0, 3, 1, 2>}> : (tensor<1x4x4x1xi8>) -> tensor<1x1x4x4xi8>
  %s = "tosa.const_shape"() <{values = dense<[1, 16, 2]> : tensor<3xindex>}> : () -> !tosa.shape<3>
  %flat = "tosa.reshape"(%x, %s) : (tensor<1x4x4x2xi8>, !tosa.shape<3>) -> tensor<1x16x2xi8>
  %mx = "tosa.reduce_max"(%flat) <{axis = 1 : i32}> : (tensor<1x16x2xi8>) -> tensor<1x1x2xi8>
  return %t : tensor<1x1x4x4xi8>
}
