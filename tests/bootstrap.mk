# tests of the bootstrap layer
