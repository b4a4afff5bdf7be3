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

void runtime_slot_init(struct runtime_slot *s)
{
    atomic_init(&s->rt, NULL);
    pthread_mutex_init(&s->lock, NULL);
}

void runtime_slot_destroy(struct runtime_slot *s)
{
    runtime_unref(atomic_exchange(&s->rt, NULL));
    pthread_mutex_destroy(&s->lock);
}

struct runtime *runtime_current(struct runtime_slot *s)
{
    pthread_mutex_lock(&s->lock);
    struct runtime *rt = atomic_load_explicit(&s->rt, memory_order_acquire);
    if (rt) /* an empty slot: before the first generation, or after the last */
        runtime_ref(rt);
    pthread_mutex_unlock(&s->lock);
    return rt;
}

void runtime_publish(struct runtime_slot *s, struct runtime *rt)
{
    pthread_mutex_lock(&s->lock);
    struct runtime *old = atomic_exchange_explicit(&s->rt, rt, memory_order_acq_rel);
    pthread_mutex_unlock(&s->lock);
    runtime_unref(old);
}
