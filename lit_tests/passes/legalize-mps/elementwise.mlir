// RUN: %nn2tosa opt %s --passes=legalize-mps | %FileCheck %s

// Elementwise nodes: one nn op each on operands converted to the node's compute type.

// add with alpha scales the second operand; f16 operands compute in f16 although the file declares
// the result f32 (what MPS computes in an fp16 graph); the graph output gets its declared type back.
// CHECK-LABEL: sym_name = "add_alpha"
// CHECK: ^bb0(%[[XA:[^:]*]]: {{[^%]*}}, %[[YA:[^:]*]]: {{[^%]*}}
// CHECK: %[[A:.*]] = "nn.constant"() {value = dense<2.500000e+00> : tensor<f16>}
// CHECK-NEXT: %[[S:.*]] = "nn.mul"(%[[YA]], %[[A]]) : (tensor<2x3xf16>, tensor<f16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[R:.*]] = "nn.add"(%[[XA]], %[[S]]) : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf16>
// CHECK-NEXT: %[[O:.*]] = "nn.cast"(%[[R]]) : (tensor<2x3xf16>) -> tensor<2x3xf32>
// CHECK-NEXT: "func.return"(%[[O]])
func.func @add_alpha(%x: tensor<2x3xf16>, %y: tensor<2x3xf16>) -> tensor<2x3xf32> {
  %0 = "mps.Add"(%x, %y) {alpha = 2.5 : f32, operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x3xf16>, tensor<2x3xf16>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// rounding_mode="trunc": sign(q) * floor(|q|) (nn has no trunc); "floor": floor_div.
// CHECK-LABEL: sym_name = "div_modes"
// CHECK: ^bb0(%[[XA:[^:]*]]: {{[^%]*}}, %[[YA:[^:]*]]: {{[^%]*}}
// CHECK: %[[Q:.*]] = "nn.div"(%[[XA]], %[[YA]])
// CHECK-NEXT: %[[SG:.*]] = "nn.sign"(%[[Q]])
// CHECK-NEXT: %[[AB:.*]] = "nn.abs"(%[[Q]])
// CHECK-NEXT: %[[FL:.*]] = "nn.floor"(%[[AB]])
// CHECK-NEXT: %[[T:.*]] = "nn.mul"(%[[SG]], %[[FL]])
// CHECK: %[[F:.*]] = "nn.floor_div"(%[[XA]], %[[YA]])
// CHECK: "func.return"(%[[T]], %[[F]])
func.func @div_modes(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "mps.Div"(%x, %y) {rounding_mode = "trunc", operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "mps.Div"(%x, %y) {rounding_mode = "floor", operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1 : tensor<4xf32>, tensor<4xf32>
}

// Integer trunc division is nn.div itself; Fmod has C's sign (of x), Remainder Python's (of y).
// CHECK-LABEL: sym_name = "int_division"
// CHECK: ^bb0(%[[XA:[^:]*]]: {{[^%]*}}, %[[YA:[^:]*]]: {{[^%]*}}
// CHECK: %[[D:.*]] = "nn.div"(%[[XA]], %[[YA]]) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT: %[[M:.*]] = "nn.fmod"(%[[XA]], %[[YA]])
// CHECK-NEXT: %[[R:.*]] = "nn.mod"(%[[XA]], %[[YA]])
// CHECK-NEXT: "func.return"(%[[D]], %[[M]], %[[R]])
func.func @int_division(%x: tensor<4xi32>, %y: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = "mps.Div"(%x, %y) {rounding_mode = "trunc", operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = "mps.Fmod"(%x, %y) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %2 = "mps.Remainder"(%x, %y) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}

// Bitwise ops on booleans are logical ops; a float operand of logical_not is compared with zero.
// CHECK-LABEL: sym_name = "logic"
// CHECK: ^bb0(%[[AA:[^:]*]]: {{[^%]*}}, %[[BA:[^:]*]]: {{[^%]*}}, %[[IA:[^:]*]]: {{[^%]*}}, %[[FA:[^:]*]]: {{[^%]*}}
// CHECK: %[[OR:.*]] = "nn.logical_or"(%[[AA]], %[[BA]]) : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
// CHECK-NEXT: %[[NOT:.*]] = "nn.bitwise_not"(%[[IA]]) : (tensor<4xi32>) -> tensor<4xi32>
// CHECK-NEXT: %[[B:.*]] = "nn.cast"(%[[FA]]) : (tensor<4xf32>) -> tensor<4xi1>
// CHECK-NEXT: %[[LN:.*]] = "nn.logical_not"(%[[B]])
func.func @logic(%a: tensor<4xi1>, %b: tensor<4xi1>, %i: tensor<4xi32>, %f: tensor<4xf32>) -> (tensor<4xi1>, tensor<4xi32>, tensor<4xi1>) {
  %0 = "mps.BitwiseOr"(%a, %b) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xi1>, tensor<4xi1>) -> tensor<4xi1>
  %1 = "mps.BitwiseNot"(%i) : (tensor<4xi32>) -> tensor<4xi32>
  %2 = "mps.LogicalNot"(%f) : (tensor<4xf32>) -> tensor<4xi1>
  return %0, %1, %2 : tensor<4xi1>, tensor<4xi32>, tensor<4xi1>
}

// PyTorch promotion: int64 scalar - float tensor is float; int32 compared with float compares floats.
// CHECK-LABEL: sym_name = "promotion"
// CHECK: ^bb0(%[[XA:[^:]*]]: {{[^%]*}}, %[[IA:[^:]*]]: {{[^%]*}}
// CHECK: %[[ONE:.*]] = "nn.constant"() {value = dense<1> : tensor<i64>}
// CHECK: %[[F:.*]] = "nn.cast"(%[[ONE]]) : (tensor<i64>) -> tensor<f32>
// CHECK-NEXT: "nn.sub"(%[[F]], %[[XA]]) : (tensor<f32>, tensor<5xf32>) -> tensor<5xf32>
// CHECK: %[[IF:.*]] = "nn.cast"(%[[IA]]) : (tensor<5xi32>) -> tensor<5xf32>
// CHECK-NEXT: "nn.less"(%[[IF]], %[[XA]]) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xi1>
func.func @promotion(%x: tensor<5xf32>, %i: tensor<5xi32>) -> (tensor<5xf32>, tensor<5xi1>) {
  %c = "mps.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
  %0 = "mps.Sub"(%c, %x) {alpha = 1.0 : f32, operandSegmentSizes = array<i32: 1, 1>} : (tensor<i64>, tensor<5xf32>) -> tensor<5xf32>
  %1 = "mps.Lt"(%i, %x) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<5xi32>, tensor<5xf32>) -> tensor<5xi1>
  return %0, %1 : tensor<5xf32>, tensor<5xi1>
}

// CHECK-LABEL: sym_name = "where"
// CHECK: ^bb0(%[[CA:[^:]*]]: {{[^%]*}}, %[[XA:[^:]*]]: {{[^%]*}}, %[[YA:[^:]*]]: {{[^%]*}}
// CHECK: "nn.select"(%[[CA]], %[[XA]], %[[YA]]) : (tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
func.func @where(%c: tensor<4xi1>, %x: tensor<4xi32>, %y: tensor<4xi32>) -> tensor<4xi32> {
  %0 = "mps.Where"(%c, %x, %y) {operandSegmentSizes = array<i32: 1, 1, 1>} : (tensor<4xi1>, tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// Members the backend never emits: MPSMin / MPSMax are binary min / max; MPSAtan2 is built from atan.
// CHECK-LABEL: sym_name = "never_emitted"
// CHECK: ^bb0(%[[XA:[^:]*]]: {{[^%]*}}, %[[YA:[^:]*]]: {{[^%]*}}
// CHECK: %[[MIN:.*]] = "nn.minimum"(%[[XA]], %[[YA]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT: %[[MAX:.*]] = "nn.maximum"(%[[XA]], %[[YA]]) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
// CHECK: %[[Q:.*]] = "nn.div"(%[[XA]], %[[YA]])
// CHECK-NEXT: %[[ATAN:.*]] = "nn.atan"(%[[Q]])
// CHECK: "nn.less"(%[[YA]],
// CHECK: %[[ON_AXIS:.*]] = "nn.equal"(%[[YA]],
// CHECK-NEXT: %[[ATAN2:.*]] = "nn.select"(%[[ON_AXIS]],
// CHECK-NEXT: "func.return"(%[[MIN]], %[[MAX]], %[[ATAN2]])
func.func @never_emitted(%x: tensor<4xf32>, %y: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = "mps.Min"(%x, %y) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "mps.Max"(%x, %y) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "mps.Atan2"(%x, %y) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
