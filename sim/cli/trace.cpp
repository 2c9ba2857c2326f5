// sim/cli/trace: filled in below.
