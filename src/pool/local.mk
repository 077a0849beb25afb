# pool layer
