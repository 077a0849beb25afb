# tests of the cuda layer
