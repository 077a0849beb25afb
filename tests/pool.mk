# tests of the pool layer
