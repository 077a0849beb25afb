# algo layer
