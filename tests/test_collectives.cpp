// test_collectives: filled in below.
