// Counts the process's allocations for `compare` (allocations per operation of a row), by
// replacing glibc's allocation functions with ones that count and forward to glibc's own
// (`__libc_*`, the documented way to replace malloc). Defined in the executable, these win over
// libc's for every library of the process. While counting is off a call costs one relaxed load
// more than glibc's; while it is on, one relaxed atomic add.

#include "AllocationCounter.h"

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t size);
extern void *__libc_calloc(size_t count, size_t size);
extern void *__libc_realloc(void *pointer, size_t size);
extern void __libc_free(void *pointer);
extern void *__libc_memalign(size_t alignment, size_t size);

static _Atomic int counting = 0;
static _Atomic int64_t allocations = 0;

static inline void count(void) {
    if (__builtin_expect(atomic_load_explicit(&counting, memory_order_relaxed), 0)) {
        atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
    }
}

int64_t allocation_counter_start(void) {
    atomic_store_explicit(&counting, 1, memory_order_seq_cst);
    return atomic_load_explicit(&allocations, memory_order_seq_cst);
}

int64_t allocation_counter_stop(void) {
    atomic_store_explicit(&counting, 0, memory_order_seq_cst);
    return atomic_load_explicit(&allocations, memory_order_seq_cst);
}

int64_t allocation_counter_read(void) {
    return atomic_load_explicit(&allocations, memory_order_seq_cst);
}

void *malloc(size_t size) {
    count();
    return __libc_malloc(size);
}

void *calloc(size_t count_, size_t size) {
    count();
    return __libc_calloc(count_, size);
}

void *realloc(void *pointer, size_t size) {
    count();
    return __libc_realloc(pointer, size);
}

void free(void *pointer) {
    __libc_free(pointer);
}

void *memalign(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

void *aligned_alloc(size_t alignment, size_t size) {
    count();
    return __libc_memalign(alignment, size);
}

int posix_memalign(void **result, size_t alignment, size_t size) {
    if (alignment % sizeof(void *) != 0 || (alignment & (alignment - 1)) != 0 || alignment == 0) return EINVAL;
    count();
    void *pointer = __libc_memalign(alignment, size);
    if (pointer == NULL) return ENOMEM;
    *result = pointer;
    return 0;
}
