// test_rail_topology: filled in below.
