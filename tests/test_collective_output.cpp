// test_collective_output: filled in below.
