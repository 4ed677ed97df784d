// RUN: %nn2tosa opt %s --passes=lower-to-tosa,cse,dce | %FileCheck %s

// Padding below the kernel: MAX_POOL2D itself; (7 + 3 - 3) % 2 = 1 bottom padding row is unused.
// CHECK-LABEL: sym_name = "native"
// CHECK: %[[Y:.*]] = "tosa.max_pool2d"(%{{.*}}) <{kernel = array<i64: 3, 3>, nan_mode = #tosa.nan_mode<PROPAGATE>, pad = array<i64: 1, 1, 1, 1>, stride = array<i64: 2, 2>}> : (tensor<1x7x7x2xf32>) -> tensor<1x4x4x2xf32>
// CHECK-NEXT: "func.return"(%[[Y]])
func.func @native(%x: tensor<1x7x7x2xf32>) -> tensor<1x4x4x2xf32> {
  %y = "nn.max_pool2d"(%x) {kernel = array<i64: 3, 3>, stride = array<i64: 2, 2>, pad = array<i64: 1, 2, 1, 1>, dilation = array<i64: 1, 1>} : (tensor<1x7x7x2xf32>) -> tensor<1x4x4x2xf32>
  return %y : tensor<1x4x4x2xf32>
}

// Padding >= kernel (TOSA forbids it): explicit -inf padding (one rank-4 PAD), then an unpadded pool.
// CHECK-LABEL: sym_name = "big_pad"
// CHECK: %[[NEG:.*]] = "tosa.const"() <{values = dense<0xFF800000> : tensor<1xf32>}>
// CHECK: "tosa.pad"(%{{.*}}, %{{.*}}, %[[NEG]]) : (tensor<1x3x3x1xf32>, !tosa.shape<8>, tensor<1xf32>) -> tensor<1x7x4x1xf32>
// CHECK: "tosa.max_pool2d"(%{{.*}}) <{kernel = array<i64: 2, 2>, {{.*}}pad = array<i64: 0, 0, 0, 0>, {{.*}}}> : (tensor<1x7x4x1xf32>) -> tensor<1x6x3x1xf32>
func.func @big_pad(%x: tensor<1x3x3x1xf32>) -> tensor<1x6x3x1xf32> {
  %y = "nn.max_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 1, 1>, pad = array<i64: 3, 1, 0, 1>, dilation = array<i64: 1, 1>} : (tensor<1x3x3x1xf32>) -> tensor<1x6x3x1xf32>
  return %y : tensor<1x6x3x1xf32>
}

// Dilation [3, 5], stride [2, 1] (space to batch): -inf padding to whole dilation blocks (9 x 10),
// the 15 phases moved into the batch, one undilated stride-1 pool, phases moved back, then the
// first 3 columns and every 2nd row (a reshape to [.., 3, 2, ..] and a slice of index 0).
// CHECK-LABEL: sym_name = "dilated"
// CHECK: "tosa.reshape"(%{{.*}}) : (tensor<1x9x10x1xf32>, !tosa.shape<6>) -> tensor<1x3x3x2x5x1xf32>
// CHECK: "tosa.transpose"(%{{.*}}) <{perms = array<i32: 2, 4, 0, 1, 3, 5>}> : (tensor<1x3x3x2x5x1xf32>) -> tensor<3x5x1x3x2x1xf32>
// CHECK: "tosa.max_pool2d"(%{{.*}}) <{kernel = array<i64: 2, 2>, {{.*}}pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : (tensor<15x3x2x1xf32>) -> tensor<15x2x1x1xf32>
// CHECK: "tosa.transpose"(%{{.*}}) <{perms = array<i32: 2, 3, 0, 4, 1, 5>}> : (tensor<3x5x1x2x1x1xf32>) -> tensor<1x2x3x1x5x1xf32>
// CHECK: "tosa.slice"(%{{.*}}) : (tensor<1x6x5x1xf32>, !tosa.shape<4>, !tosa.shape<4>) -> tensor<1x6x3x1xf32>
// CHECK: "tosa.slice"(%{{.*}}) : (tensor<1x3x2x3x1x1xf32>, !tosa.shape<6>, !tosa.shape<6>) -> tensor<1x3x1x3x1x1xf32>
// CHECK: "tosa.reshape"(%{{.*}}) : (tensor<1x3x1x3x1x1xf32>, !tosa.shape<4>) -> tensor<1x3x3x1xf32>
func.func @dilated(%x: tensor<1x8x8x1xf32>) -> tensor<1x3x3x1xf32> {
  %y = "nn.max_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 1>, pad = array<i64: 0, 0, 0, 0>, dilation = array<i64: 3, 5>} : (tensor<1x8x8x1xf32>) -> tensor<1x3x3x1xf32>
  return %y : tensor<1x3x3x1xf32>
}

// i8 data pools as it is (integer padding would be -128, the type's minimum).
// CHECK-LABEL: sym_name = "int8"
// CHECK: "tosa.max_pool2d"(%{{.*}}) {{.*}} : (tensor<1x4x4x1xi8>) -> tensor<1x2x2x1xi8>
func.func @int8(%x: tensor<1x4x4x1xi8>) -> tensor<1x2x2x1xi8> {
  %y = "nn.max_pool2d"(%x) {kernel = array<i64: 2, 2>, stride = array<i64: 2, 2>, pad = array<i64: 0, 0, 0, 0>, dilation = array<i64: 1, 1>} : (tensor<1x4x4x1xi8>) -> tensor<1x2x2x1xi8>
  return %y : tensor<1x2x2x1xi8>
}
