// models/nccl_tuning: filled in below.
