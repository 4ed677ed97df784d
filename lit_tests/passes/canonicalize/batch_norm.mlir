// RUN: %nn2tosa opt %s --passes=canonicalize | %FileCheck %s

// Statistics: mean [1, 2], var [3, 0], epsilon 1, gamma [4, 3], beta [0.5, -1]
// -> scale = gamma / sqrt(var + eps) = [2, 3], shift = beta - mean * scale = [-1.5, -7].

// A batch norm after a conv folds into it: weights [1, 2] * scale, a new bias = shift.
// CHECK-LABEL: sym_name = "into_conv2d"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00]]], {{\[\[\[}}6.000000e+00]]]]> : tensor<2x1x1x1xf32>}
// CHECK-DAG: %[[B:.*]] = "nn.constant"() {value = dense<[-1.500000e+00, -7.000000e+00]> : tensor<2xf32>}
// CHECK: %[[C:.*]] = "nn.conv2d"(%[[X]], %[[W]], %[[B]])
// CHECK-NOT: batch_norm
// CHECK: "func.return"(%[[C]])
func.func @into_conv2d(%x: tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %mean = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %var = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gamma = "nn.constant"() {value = dense<[4.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %beta = "nn.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = "nn.batch_norm"(%c, %mean, %var, %gamma, %beta) {epsilon = 1.0 : f64, axis = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %bn : tensor<1x2x2x2xf32>
}

// With a bias b = [10, 20]: bias' = b * scale + shift = [18.5, 53].
// CHECK-LABEL: sym_name = "into_fully_connected"
// CHECK-DAG: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[}}2.000000e+00, 4.000000e+00], [3.000000e+00, 6.000000e+00]]> : tensor<2x2xf32>}
// CHECK-DAG: %[[B:.*]] = "nn.constant"() {value = dense<[1.850000e+01, 5.300000e+01]> : tensor<2xf32>}
// CHECK: "nn.fully_connected"(%{{.*}}, %[[W]], %[[B]])
// CHECK-NOT: batch_norm
func.func @into_fully_connected(%x: tensor<3x2xf32>) -> tensor<3x2xf32> {
  %w = "nn.constant"() {value = dense<[[1.0, 2.0], [1.0, 2.0]]> : tensor<2x2xf32>} : () -> tensor<2x2xf32>
  %b = "nn.constant"() {value = dense<[10.0, 20.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %c = "nn.fully_connected"(%x, %w, %b) : (tensor<3x2xf32>, tensor<2x2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  %mean = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %var = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gamma = "nn.constant"() {value = dense<[4.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %beta = "nn.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = "nn.batch_norm"(%c, %mean, %var, %gamma, %beta) {epsilon = 1.0 : f64, axis = 1 : i64} : (tensor<3x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<3x2xf32>
  return %bn : tensor<3x2xf32>
}

// Depthwise weights [KH, KW, C, M] scale along (C, M): channel c*M+m. Here C = 1, M = 2.
// CHECK-LABEL: sym_name = "into_depthwise"
// CHECK-DAG: %[[W:.*]] = "nn.constant"() {value = dense<{{\[\[\[\[}}2.000000e+00, 6.000000e+00]]]]> : tensor<1x1x1x2xf32>}
// CHECK: "nn.depthwise_conv2d"(%{{.*}}, %[[W]], %{{.*}})
// CHECK-NOT: batch_norm
func.func @into_depthwise(%x: tensor<1x2x2x1xf32>) -> tensor<1x2x2x2xf32> {
  %w = "nn.constant"() {value = dense<[[[[1.0, 2.0]]]]> : tensor<1x1x1x2xf32>} : () -> tensor<1x1x1x2xf32>
  %c = "nn.depthwise_conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>} : (tensor<1x2x2x1xf32>, tensor<1x1x1x2xf32>) -> tensor<1x2x2x2xf32>
  %mean = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %var = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gamma = "nn.constant"() {value = dense<[4.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %beta = "nn.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = "nn.batch_norm"(%c, %mean, %var, %gamma, %beta) {epsilon = 1.0 : f64, axis = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %bn : tensor<1x2x2x2xf32>
}

// The conv result is also returned: folding would change it, so the batch norm becomes
// x * scale + shift instead.
// CHECK-LABEL: sym_name = "shared_conv"
// CHECK: %[[C:.*]] = "nn.conv2d"
// CHECK-DAG: %[[S:.*]] = "nn.constant"() {value = dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>}
// CHECK-DAG: %[[T:.*]] = "nn.constant"() {value = dense<[-1.500000e+00, -7.000000e+00]> : tensor<2xf32>}
// CHECK: %[[M:.*]] = "nn.mul"(%[[C]], %[[S]])
// CHECK: %[[A:.*]] = "nn.add"(%[[M]], %[[T]])
// CHECK: "func.return"(%[[A]], %[[C]])
func.func @shared_conv(%x: tensor<1x2x2x1xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = "nn.constant"() {value = dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>} : () -> tensor<2x1x1x1xf32>
  %c = "nn.conv2d"(%x, %w) {stride = array<i64: 1, 1>, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, groups = 1 : i64} : (tensor<1x2x2x1xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %mean = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %var = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gamma = "nn.constant"() {value = dense<[4.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %beta = "nn.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = "nn.batch_norm"(%c, %mean, %var, %gamma, %beta) {epsilon = 1.0 : f64, axis = 3 : i64} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  return %bn, %c : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}

// A batch norm over axis 1 of an input becomes mul + add by constants shaped [C, 1, 1].
// CHECK-LABEL: sym_name = "decomposed"
// CHECK: ^bb0(%[[X:[^:]*]]:
// CHECK-DAG: %[[S:.*]] = "nn.constant"() {value = dense<{{\[\[\[}}2.000000e+00]], {{\[\[}}3.000000e+00]]]> : tensor<2x1x1xf32>}
// CHECK-DAG: %[[T:.*]] = "nn.constant"() {value = dense<{{\[\[\[}}-1.500000e+00]], {{\[\[}}-7.000000e+00]]]> : tensor<2x1x1xf32>}
// CHECK: %[[M:.*]] = "nn.mul"(%[[X]], %[[S]])
// CHECK: %[[A:.*]] = "nn.add"(%[[M]], %[[T]])
// CHECK: "func.return"(%[[A]])
func.func @decomposed(%x: tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32> {
  %mean = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %var = "nn.constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %gamma = "nn.constant"() {value = dense<[4.0, 3.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %beta = "nn.constant"() {value = dense<[0.5, -1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = "nn.batch_norm"(%x, %mean, %var, %gamma, %beta) {epsilon = 1.0 : f64, axis = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  return %bn : tensor<1x2x3x3xf32>
}

// Statistics that are not constants: the batch norm stays.
// CHECK-LABEL: sym_name = "dynamic_statistics"
// CHECK: "nn.batch_norm"
func.func @dynamic_statistics(%x: tensor<1x2xf32>, %m: tensor<2xf32>) -> tensor<1x2xf32> {
  %c = "nn.constant"() {value = dense<[1.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %bn = "nn.batch_norm"(%x, %m, %c, %c, %c) {epsilon = 1.0 : f64, axis = 1 : i64} : (tensor<1x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2xf32>
  return %bn : tensor<1x2xf32>
}
