// Merges comm_bench fits into a system config.
#include "config/comm_merge.h"
