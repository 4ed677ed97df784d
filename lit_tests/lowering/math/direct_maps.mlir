// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// The ops TOSA has as they are: bitwise ops on integers of their own width (i8 stays i8).
// CHECK-LABEL: sym_name = "bitwise"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<4xi32>{{.*}}, %[[Y:[^:]*]]: tensor<4xi32>{{.*}}, %[[P:[^:]*]]: tensor<4xi8>{{.*}}, %[[Q:[^:]*]]: tensor<4xi8>
// CHECK: "tosa.bitwise_and"(%[[X]], %[[Y]]) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
// CHECK: "tosa.bitwise_or"(%[[X]], %[[Y]]) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
// CHECK: "tosa.bitwise_xor"(%[[P]], %[[Q]]) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
// CHECK-NOT: "tosa.cast"
func.func @bitwise(%x: tensor<4xi32>, %y: tensor<4xi32>, %p: tensor<4xi8>, %q: tensor<4xi8>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi8>) {
  %a = "nn.bitwise_and"(%x, %y) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %b = "nn.bitwise_or"(%x, %y) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %c = "nn.bitwise_xor"(%p, %q) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %a, %b, %c : tensor<4xi32>, tensor<4xi32>, tensor<4xi8>
}

// Logical ops broadcast numpy-style: the lower-rank operand is reshaped to the result's rank once
// (CSE shares it). reduce_any keeps the reduced axis in TOSA, so a reshape drops it (keep_dims false).
// CHECK-LABEL: sym_name = "logical"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<4xi1>{{.*}}, %[[Y:[^:]*]]: tensor<2x4xi1>
// CHECK: %[[X2:.*]] = "tosa.reshape"(%[[X]], %{{.*}}) : (tensor<4xi1>, !tosa.shape<2>) -> tensor<1x4xi1>
// CHECK: "tosa.logical_and"(%[[X2]], %[[Y]]) : (tensor<1x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK: "tosa.logical_xor"(%[[X2]], %[[Y]]) : (tensor<1x4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
// CHECK: %[[R:.*]] = "tosa.reduce_any"(%[[Y]]) <{axis = 0 : i32}> : (tensor<2x4xi1>) -> tensor<1x4xi1>
// CHECK: "tosa.reshape"(%[[R]], %{{.*}}) : (tensor<1x4xi1>, !tosa.shape<1>) -> tensor<4xi1>
func.func @logical(%x: tensor<4xi1>, %y: tensor<2x4xi1>) -> (tensor<2x4xi1>, tensor<2x4xi1>, tensor<4xi1>) {
  %a = "nn.logical_and"(%x, %y) : (tensor<4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %b = "nn.logical_xor"(%x, %y) : (tensor<4xi1>, tensor<2x4xi1>) -> tensor<2x4xi1>
  %c = "nn.reduce_any"(%y) {axes = [0], keep_dims = false} : (tensor<2x4xi1>) -> tensor<4xi1>
  return %a, %b, %c : tensor<2x4xi1>, tensor<2x4xi1>, tensor<4xi1>
}

// greater_equal is TOSA's; not_equal is NOT(equal), which makes NaN != NaN true as in IEEE.
// CHECK-LABEL: sym_name = "compare"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<4xf32>{{.*}}, %[[Y:[^:]*]]: tensor<4xf32>
// CHECK: "tosa.greater_equal"(%[[X]], %[[Y]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
// CHECK: %[[E:.*]] = "tosa.equal"(%[[X]], %[[Y]])
// CHECK: "tosa.logical_not"(%[[E]]) : (tensor<4xi1>) -> tensor<4xi1>
func.func @compare(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi1>) {
  %a = "nn.greater_equal"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  %b = "nn.not_equal"(%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %a, %b : tensor<4xi1>, tensor<4xi1>
}

// ceil, erf and reciprocal are TOSA 1.0 float ops of their own.
// CHECK-LABEL: sym_name = "unary"
// CHECK: ^bb0(%[[X:[^:]*]]: tensor<4xf32>
// CHECK: "tosa.ceil"(%[[X]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: "tosa.erf"(%[[X]]) : (tensor<4xf32>) -> tensor<4xf32>
// CHECK: "tosa.reciprocal"(%[[X]]) : (tensor<4xf32>) -> tensor<4xf32>
func.func @unary(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = "nn.ceil"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %b = "nn.erf"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %c = "nn.reciprocal"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %a, %b, %c : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
