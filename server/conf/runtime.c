/* runtime.c — a configuration generation's references; see runtime.h. Its teardown is the
 * builder's (runtime_build sets rt->destroy), which knows what it put into the runtime. */
#include "conf/runtime.h"

void runtime_free(struct runtime *rt)
{
    rt->destroy(rt);
}

void runtime_ref(struct runtime *rt)
{
    atomic_fetch_add_explicit(&rt->refs, 1, memory_order_relaxed);
}

void runtime_unref(struct runtime *rt)
{
    if (rt && atomic_fetch_sub_explicit(&rt->refs, 1, memory_order_acq_rel) == 1)
        runtime_free(rt);
}
