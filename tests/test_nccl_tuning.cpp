// test_nccl_tuning: filled in below.
