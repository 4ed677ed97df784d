// A small int8 graph in TOSA 1.0 MLIR (generic form): a convolution with zero points, a reshape by a
// shape value, and a RESCALE of unsigned bytes. tosa-opt turns it into the .tosa the tests read.
module {
  func.func @main(%x: tensor<1x4x4x2xi8> {tosa.tensor_name = "image"},
                  %u: tensor<4xi8> {tosa.tensor_name = "bytes"})
      -> (tensor<1x48xi32> {tosa.tensor_name = "features"}, tensor<4xi8> {tosa.tensor_name = "signed"}) {
    %w = "tosa.const"() <{values = dense<[[[[1, 2]]], [[[3, 4]]], [[[-5, 6]]]]> : tensor<3x1x1x2xi8>}> : () -> tensor<3x1x1x2xi8>
    %b = "tosa.const"() <{values = dense<[10, 20, 30]> : tensor<3xi32>}> : () -> tensor<3xi32>
    %izp = "tosa.const"() <{values = dense<-3> : tensor<1xi8>}> : () -> tensor<1xi8>
    %wzp = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %c = "tosa.conv2d"(%x, %w, %b, %izp, %wzp) <{acc_type = i32, dilation = array<i64: 1, 1>, pad = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>}> : (tensor<1x4x4x2xi8>, tensor<3x1x1x2xi8>, tensor<3xi32>, tensor<1xi8>, tensor<1xi8>) -> tensor<1x4x4x3xi32> loc("conv")
    %s = "tosa.const_shape"() <{values = dense<[1, 48]> : tensor<2xindex>}> : () -> !tosa.shape<2>
    %r = "tosa.reshape"(%c, %s) : (tensor<1x4x4x3xi32>, !tosa.shape<2>) -> tensor<1x48xi32> loc("flatten")
    %m = "tosa.const"() <{values = dense<1073741824> : tensor<1xi32>}> : () -> tensor<1xi32>
    %sh = "tosa.const"() <{values = dense<30> : tensor<1xi8>}> : () -> tensor<1xi8>
    %zin = "tosa.const"() <{values = dense<-128> : tensor<1xi8>}> : () -> tensor<1xi8>
    %zout = "tosa.const"() <{values = dense<0> : tensor<1xi8>}> : () -> tensor<1xi8>
    %q = "tosa.rescale"(%u, %m, %sh, %zin, %zout) <{input_unsigned = true, output_unsigned = false, per_channel = false, rounding_mode = #tosa.rounding_mode<SINGLE_ROUND>, scale32 = true}> : (tensor<4xi8>, tensor<1xi32>, tensor<1xi8>, tensor<1xi8>, tensor<1xi8>) -> tensor<4xi8> loc("from_uint8")
    return %r, %q : tensor<1x48xi32>, tensor<4xi8>
  }
}
