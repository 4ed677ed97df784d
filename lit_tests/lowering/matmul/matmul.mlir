// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// b is one matrix: a's batch joins its rows, one [1, 6, 4] x [1, 4, 5] MATMUL, reshaped back.
// CHECK-LABEL: sym_name = "weight_matrix"
// CHECK: ^bb0(%[[A:[^:]*]]: tensor<2x3x4xf32> {{.*}}, %[[B:[^:]*]]: tensor<4x5xf32>
// CHECK-DAG: %[[A3:.*]] = "tosa.reshape"(%[[A]], %{{.*}}) : (tensor<2x3x4xf32>, !tosa.shape<3>) -> tensor<1x6x4xf32>
// CHECK-DAG: %[[B3:.*]] = "tosa.reshape"(%[[B]], %{{.*}}) : (tensor<4x5xf32>, !tosa.shape<3>) -> tensor<1x4x5xf32>
// CHECK-DAG: %[[Z:.*]] = "tosa.const"() <{values = dense<0.000000e+00> : tensor<1xf32>}>
// CHECK: %[[P:.*]] = "tosa.matmul"(%[[A3]], %[[B3]], %[[Z]], %[[Z]]) : ({{.*}}) -> tensor<1x6x5xf32>
// CHECK: %[[Y:.*]] = "tosa.reshape"(%[[P]], %{{.*}}) : (tensor<1x6x5xf32>, !tosa.shape<3>) -> tensor<2x3x5xf32>
// CHECK: "func.return"(%[[Y]])
func.func @weight_matrix(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %y = "nn.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// Batches broadcast: each operand is tiled to the common batch [2, 3], then [6, M, K] x [6, K, N].
// CHECK-LABEL: sym_name = "broadcast"
// CHECK-DAG: "tosa.tile"(%{{.*}}) : (tensor<1x3x2x4xf32>, !tosa.shape<4>) -> tensor<2x3x2x4xf32>
// CHECK-DAG: "tosa.tile"(%{{.*}}) : (tensor<2x1x4x5xf32>, !tosa.shape<4>) -> tensor<2x3x4x5xf32>
// CHECK: "tosa.matmul"({{.*}}) : (tensor<6x2x4xf32>, tensor<6x4x5xf32>, tensor<1xf32>, tensor<1xf32>) -> tensor<6x2x5xf32>
func.func @broadcast(%a: tensor<3x2x4xf32>, %b: tensor<2x1x4x5xf32>) -> tensor<2x3x2x5xf32> {
  %y = "nn.matmul"(%a, %b) : (tensor<3x2x4xf32>, tensor<2x1x4x5xf32>) -> tensor<2x3x2x5xf32>
  return %y : tensor<2x3x2x5xf32>
}

// f16 and bf16 products come out of MATMUL as f32 and round once, by a CAST.
// CHECK-LABEL: sym_name = "half"
// CHECK: %[[P:.*]] = "tosa.matmul"({{.*}}) : (tensor<1x2x3xf16>, tensor<1x3x2xf16>, tensor<1xf16>, tensor<1xf16>) -> tensor<1x2x2xf32>
// CHECK: "tosa.cast"(%[[P]]) : (tensor<1x2x2xf32>) -> tensor<1x2x2xf16>
// CHECK: "tosa.matmul"({{.*}}) : (tensor<1x2x3xbf16>, tensor<1x3x2xbf16>, tensor<1xbf16>, tensor<1xbf16>) -> tensor<1x2x2xf32>
func.func @half(%a: tensor<2x3xf16>, %b: tensor<3x2xf16>, %c: tensor<2x3xbf16>, %d: tensor<3x2xbf16>) -> (tensor<2x2xf16>, tensor<2x2xbf16>) {
  %y = "nn.matmul"(%a, %b) : (tensor<2x3xf16>, tensor<3x2xf16>) -> tensor<2x2xf16>
  %z = "nn.matmul"(%c, %d) : (tensor<2x3xbf16>, tensor<3x2xbf16>) -> tensor<2x2xbf16>
  return %y, %z : tensor<2x2xf16>, tensor<2x2xbf16>
}

// Plain i8 data: an exact i32 product, cast (wrapping) to the i8 result.
// CHECK-LABEL: sym_name = "int8"
// CHECK: %[[P:.*]] = "tosa.matmul"({{.*}}) : (tensor<1x2x3xi8>, tensor<1x3x2xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x2x2xi32>
// CHECK: "tosa.cast"(%[[P]]) : (tensor<1x2x2xi32>) -> tensor<1x2x2xi8>
func.func @int8(%a: tensor<2x3xi8>, %b: tensor<3x2xi8>) -> tensor<2x2xi8> {
  %y = "nn.matmul"(%a, %b) : (tensor<2x3xi8>, tensor<3x2xi8>) -> tensor<2x2xi8>
  return %y : tensor<2x2xi8>
}
