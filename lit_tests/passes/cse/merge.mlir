// RUN: %nn2tosa opt %s --passes=cse | %FileCheck %s

// Two identical ops on the same operands merge, and then so do their identical users.
// CHECK-LABEL: sym_name = "chain"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-NEXT: %[[A:.*]] = "nn.transpose"(%[[X]])
// CHECK-NEXT: %[[B:.*]] = "nn.relu"(%[[A]])
// CHECK-NEXT: "func.return"(%[[B]], %[[B]])
func.func @chain(%x: tensor<2x3xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>) {
  %a1 = "nn.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %a2 = "nn.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b1 = "nn.relu"(%a1) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  %b2 = "nn.relu"(%a2) : (tensor<3x2xf32>) -> tensor<3x2xf32>
  return %b1, %b2 : tensor<3x2xf32>, tensor<3x2xf32>
}

// Constants with the same bytes merge (NaN included); a different value or type does not.
// CHECK-LABEL: sym_name = "constants"
// CHECK-COUNT-4: "nn.constant"
// CHECK-NOT: "nn.constant"
// CHECK: "func.return"(%[[C:[0-9]+]], %[[C]], %[[N:[0-9]+]], %[[N]], %{{[0-9]+}}, %{{[0-9]+}})
func.func @constants() -> (tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf16>) {
  %a = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %n1 = "nn.constant"() {value = dense<0x7FC00000> : tensor<2xf32>} : () -> tensor<2xf32>
  %n2 = "nn.constant"() {value = dense<0x7FC00000> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "nn.constant"() {value = dense<[1.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %d = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf16>} : () -> tensor<2xf16>
  return %a, %b, %n1, %n2, %c, %d : tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf16>
}

// Different attributes or operand order keep ops apart.
// CHECK-LABEL: sym_name = "different"
// CHECK-COUNT-2: "nn.transpose"
// CHECK-COUNT-2: "nn.sub"
func.func @different(%x: tensor<2x2xf32>, %y: tensor<2x2xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>) {
  %a = "nn.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %b = "nn.transpose"(%x) {perm = array<i64: 0, 1>} : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %c = "nn.sub"(%x, %y) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  %d = "nn.sub"(%y, %x) : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>
  return %a, %b, %c, %d : tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>, tensor<2x2xf32>
}

// Ops of a dialect nn2tosa does not define are not merged (their effects are unknown).
// CHECK-LABEL: sym_name = "unknown"
// CHECK-COUNT-2: "other.op"
func.func @unknown(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %a = "other.op"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  %b = "other.op"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return %a, %b : tensor<2xf32>, tensor<2xf32>
}
