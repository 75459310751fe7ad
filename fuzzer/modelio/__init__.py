"""Models in and out: safe loading of untrusted files (corrupt, hostile or absurd models are
refused with an InputError) and walking a model's graphs.

In: paths and serialized bytes. Out: ``onnx.ModelProto`` objects and facts about them (node
counts with subgraphs, op types, stored tensors). Nothing here runs a model or an optimizer.
"""
