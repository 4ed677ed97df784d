// RUN: %not %nn2tosa opt %s --passes=legalize-mps 2>&1 | %FileCheck %s

// Nodes nn cannot express are all listed, in one line, with their locations and reasons (exit 3,
// checked by tests/passes/test_legalize_mps.py).
// CHECK: nn2tosa: error: 3 unsupported constructs:
// CHECK-SAME: node 0 (MPSIndexTensor): an index of element type i1 (a boolean mask selects a data-dependent number of elements
// CHECK-SAME: node 1 (MPSAvgPool2D): a dilated average pool
// CHECK-SAME: node 2 (MPSBatchNorm): batch norm without running statistics
func.func @main(%x: tensor<2x3xf32>, %mask: tensor<2xi1>, %img: tensor<1x1x5x5xf32>) -> (tensor<1x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>) {
  %0 = "mps.IndexTensor"(%x, %mask) {operandSegmentSizes = array<i32: 1, 1>} : (tensor<2x3xf32>, tensor<2xi1>) -> tensor<1x3xf32> loc("node 0"("MPSIndexTensor"))
  %1 = "mps.AvgPool2D"(%img) {ceil_mode = false, count_include_pad = true, dilation_height = 2 : i32, dilation_width = 2 : i32, divisor_override = 0 : i32, kernel_height = 2 : i32, kernel_width = 2 : i32, padding_bottom = 0 : i32, padding_left = 0 : i32, padding_right = 0 : i32, padding_top = 0 : i32, resultSegmentSizes = array<i32: 1, 0>, stride_height = 1 : i32, stride_width = 1 : i32} : (tensor<1x1x5x5xf32>) -> tensor<1x1x3x3xf32> loc("node 1"("MPSAvgPool2D"))
  %2 = "mps.BatchNorm"(%img) {epsilon = 1.0e-5 : f32, momentum = 0.1 : f32, operandSegmentSizes = array<i32: 1, 0, 0, 0, 0>, resultSegmentSizes = array<i32: 1, 0, 0>} : (tensor<1x1x5x5xf32>) -> tensor<1x1x5x5xf32> loc("node 2"("MPSBatchNorm"))
  return %0, %1, %2 : tensor<1x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x5x5xf32>
}
