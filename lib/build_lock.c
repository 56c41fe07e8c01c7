/* The process-wide table build lock: see build_lock.h. */
#include "lib/build_lock.h"

#include <pthread.h>

static pthread_mutex_t build_lock = PTHREAD_MUTEX_INITIALIZER;

void np_build_lock(void)
{
	pthread_mutex_lock(&build_lock);
}

void np_build_unlock(void)
{
	pthread_mutex_unlock(&build_lock);
}
