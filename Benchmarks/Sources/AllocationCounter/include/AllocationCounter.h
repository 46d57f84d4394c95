#ifndef ALLOCATION_COUNTER_H
#define ALLOCATION_COUNTER_H

#include <stdint.h>

/// Starts counting allocations (malloc, calloc, realloc, posix_memalign, aligned_alloc,
/// memalign) made by every thread of the process; returns the count so far.
int64_t allocation_counter_start(void);

/// Stops counting; returns the count so far.
int64_t allocation_counter_stop(void);

/// Allocations counted so far.
int64_t allocation_counter_read(void);

#endif
