// models/collective: filled in below.
