// ERROR: 2:25: error: expected the function's @name
func.func @"unterminated