// models/nccl_plan: filled in below.
