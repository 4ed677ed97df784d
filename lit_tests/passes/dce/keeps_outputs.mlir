// RUN: %nn2tosa opt %s --passes=dce | %FileCheck %s

// A value returned by the graph is live even when no op reads it, and so is what it reads.
// CHECK: %[[C:.*]] = "nn.constant"
// CHECK: %[[N:.*]] = "nn.neg"(%[[C]])
// CHECK: "func.return"(%[[N]], %{{.*}})
func.func @main(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %c = "nn.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %n = "nn.neg"(%c) : (tensor<2xf32>) -> tensor<2xf32>
  return %n, %x : tensor<2xf32>, tensor<2xf32>
}
