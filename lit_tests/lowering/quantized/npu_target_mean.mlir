// --target: an int16 global mean (q16_mean_hw's 8 x 8). Under ethos-u85 the DEPTHWISE_CONV2D of ones
// sums in i48 (zero point 0), a RESCALE by 1 takes the sum to i32 (64 elements: it fits), then TFLite's
// RESCALE to int16: Vela fuses both into the DEPTHWISE_CONV2D, where it runs REDUCE_SUM over H and W
// through transposes. Without a preset and for ethos-u55/u65 (where Vela's REDUCE_SUMs are cheaper) a
// widening RESCALE and a REDUCE_SUM per axis.
// RUN: %nn2tosa opt %s --target ethos-u85 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=WINDOW
// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=REDUCE
// RUN: %nn2tosa opt %s --target ethos-u55 --passes=lower-to-tosa,cse,dce | %FileCheck %s --check-prefix=REDUCE

// WINDOW-NOT: "tosa.reduce_sum"
// WINDOW: %[[S:.*]] = "tosa.depthwise_conv2d"(%arg{{[0-9]+}}, {{.*}}) <{acc_type = i48, {{.*}}}> : (tensor<1x8x8x4xi16>, tensor<8x8x4x1xi8>, tensor<4xi48>, {{.*}}) -> tensor<1x1x1x4xi48>
// WINDOW: %[[W:.*]] = "tosa.rescale"(%[[S]], {{.*}}) -> tensor<1x1x1x4xi32>
// WINDOW: %[[Y:.*]] = "tosa.rescale"(%[[W]], {{.*}}) -> tensor<1x1x1x4xi16>
// WINDOW: "func.return"(%[[Y]])

// REDUCE-NOT: "tosa.depthwise_conv2d"
// REDUCE: "tosa.reduce_sum"({{.*}}) <{axis = 1 : i32}>
// REDUCE: "tosa.reduce_sum"({{.*}}) <{axis = 2 : i32}>
func.func @mean_int16(%x: tensor<1x8x8x4x!quant.uniform<i16:f32, 0.00041>>) -> tensor<1x1x1x4x!quant.uniform<i16:f32, 0.00029>> {
  %y = "nn.reduce_mean"(%x) {axes = array<i64: 1, 2>, keep_dims = true} : (tensor<1x8x8x4x!quant.uniform<i16:f32, 0.00041>>) -> tensor<1x1x1x4x!quant.uniform<i16:f32, 0.00029>>
  return %y : tensor<1x1x1x4x!quant.uniform<i16:f32, 0.00029>>
}
