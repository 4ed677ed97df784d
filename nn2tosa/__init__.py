"""nn2tosa: Arm NN and ExecuTorch MPS graphs to TOSA 1.0."""
__version__ = "0.1.0"
