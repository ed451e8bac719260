// Merges kernels_bench measurements into a system config.
#include "config/kernels_merge.h"
