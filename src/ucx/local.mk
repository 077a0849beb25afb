# ucx layer
