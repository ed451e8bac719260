#include "core/error.h"
int main() { return 0; }
