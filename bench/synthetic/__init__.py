"""Deterministic large synthetic models for the benchmark, in every input format nn2tosa reads.

network.py: format-neutral descriptions (ResNet-50, a BERT-base-shaped transformer) and a numpy
forward pass; armnn.py and mps.py: serializers; fbwrite.py: a schema-driven flatbuffer writer.
"""
