# tests of the ucx layer
