// --target: a strided slice of int8 rows and columns (q8_strided_slice_pad's: rows 1, 3, 5 and every
// other column of 8 x 8). Without a preset each strided axis is a RESHAPE into (count, stride) and a
// SLICE keeping index 0, after one SLICE cutting the rows and columns visited. Under the Ethos-U55 and
// U65 presets the strides are one DEPTHWISE_CONV2D of weight 1 (zero points 0: the stored integers) and
// a RESCALE by 1 (2**30 >> 30): Vela reads rows and columns strided in one op. Under the Ethos-U85 preset
// one MAX_POOL2D of 1x1 windows with the strides, which Vela runs faster there (lowering/npu_target.py).
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=RESHAPE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=WINDOW
// RUN: %nn2tosa opt %s --target ethos-u65 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=WINDOW
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=POOL

// RESHAPE: "tosa.slice"(%arg{{[0-9]+}}, {{.*}}) : (tensor<1x8x8x4xi8>, {{.*}}) -> tensor<1x5x7x4xi8>
// RESHAPE-NOT: "tosa.depthwise_conv2d"
// RESHAPE: "tosa.reshape"
// RESHAPE: "tosa.slice"
// RESHAPE: -> tensor<1x3x4x4xi8>

// WINDOW: %[[X:.*]] = "tosa.slice"(%arg{{[0-9]+}}, {{.*}}) : (tensor<1x8x8x4xi8>, {{.*}}) -> tensor<1x5x7x4xi8>
// WINDOW: %[[ONE:.*]] = "tosa.const"() <{values = dense<1> : tensor<1x1x4x1xi8>}>
// WINDOW: %[[P:.*]] = "tosa.depthwise_conv2d"(%[[X]], %[[ONE]], {{.*}}) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x3x4x4xi32>
// WINDOW: %[[M:.*]] = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}>
// WINDOW: %[[S:.*]] = "tosa.const"() <{values = dense<30> : tensor<1xi8>}>
// WINDOW: %[[Y:.*]] = "tosa.rescale"(%[[P]], %[[M]], %[[S]], {{.*}}) -> tensor<1x3x4x4xi8>
// WINDOW-NOT: "tosa.reshape"
// WINDOW: "func.return"(%[[Y]])

// POOL: %[[X:.*]] = "tosa.slice"(%arg{{[0-9]+}}, {{.*}}) : (tensor<1x8x8x4xi8>, {{.*}}) -> tensor<1x5x7x4xi8>
// POOL-NEXT: %[[Y:.*]] = "tosa.max_pool2d"(%[[X]]) <{kernel = array<i64: 1, 1>, nan_mode = #tosa.nan_mode<PROPAGATE>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 2, 2>}> : {{.*}} -> tensor<1x3x4x4xi8>
// POOL-NEXT: "func.return"(%[[Y]])
func.func @rows_and_columns(%x: tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<1x3x4x4x!quant.uniform<i8:f32, 0.05:-3>> {
  %y = "nn.strided_slice"(%x) {begin = array<i64: 0, 1, 0, 0>, end = array<i64: 1, 6, 8, 4>, strides = array<i64: 1, 2, 2, 1>} : (tensor<1x8x8x4x!quant.uniform<i8:f32, 0.05:-3>>) -> tensor<1x3x4x4x!quant.uniform<i8:f32, 0.05:-3>>
  return %y : tensor<1x3x4x4x!quant.uniform<i8:f32, 0.05:-3>>
}
