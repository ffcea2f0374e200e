/* Per-thread memos, pure caches: one slot table per thread, one key for
 * all slots (tls_memo.h says why). */
#include "core/tls_memo.h"

#include <pthread.h>

typedef struct memo_slot {
    void *obj;
    void (*drop)(void *);
} memo_slot;

static _Thread_local memo_slot slots[CORE_MEMO_NSLOTS];
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static int key_made;

/* The key's destructor, at thread exit: v is the thread's slot table. */
static void drop_all(void *v)
{
    memo_slot *s = v;
    for (int i = 0; i < CORE_MEMO_NSLOTS; i++) {
        void *obj = s[i].obj;
        s[i].obj = NULL; /* a destructor after this one that asks gets NULL */
        if (obj && s[i].drop)
            s[i].drop(obj);
    }
}

static void key_make(void)
{
    key_made = pthread_key_create(&key, drop_all) == 0;
}

void *core_memo_get(core_memo_slot slot)
{
    return slots[slot].obj;
}

void core_memo_set(core_memo_slot slot, void *obj, void (*drop)(void *))
{
    slots[slot].obj = obj;
    slots[slot].drop = drop;
    pthread_once(&key_once, key_make);
    /* A non-NULL value makes the destructor run when this thread exits.
     * Without a key (none left) the object is only not freed at exit. */
    if (key_made)
        (void)pthread_setspecific(key, slots);
}
