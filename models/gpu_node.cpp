// models/gpu_node: filled in below.
