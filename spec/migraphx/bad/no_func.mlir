// ERROR: 4:1: error: no func.func in the input
module {
}
