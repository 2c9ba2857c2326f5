// sim/cli/nccl_table: filled in below.
