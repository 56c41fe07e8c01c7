/* The reflectors' caches: objects by key ("namespace/name" for pods, name for nodes and
 * namespaces), kept sorted so the published targets come out in a stable order.
 * Each entry remembers which list+watch owns it, so that a relist of one namespace
 * replaces exactly that namespace's pods. Values are opaque, freed by free_val. */
#ifndef NP_K8S_STORE_H
#define NP_K8S_STORE_H

#include <stddef.h>

#include "lib/error.h"

struct k8s_entry {
	char *key; /* owned */
	int owner;
	void *val; /* owned, freed with the store's free_val */
};

struct k8s_store {
	struct k8s_entry *v;
	size_t n, cap;
	void (*free_val)(void *val);
};

void k8s_store_init(struct k8s_store *s, void (*free_val)(void *val));
void k8s_store_free(struct k8s_store *s); /* frees every entry; the store stays usable */

void *k8s_store_get(const struct k8s_store *s, const char *key);

/* Inserts or replaces key. Takes ownership of key and val, also on failure. */
NP_MUST_CHECK int k8s_store_put(struct k8s_store *s, char *key, int owner, void *val, struct np_err *err);

/* Returns 1 if key was there (and is now freed), 0 if not. */
int k8s_store_del(struct k8s_store *s, const char *key);

/* Drops every entry of owner and moves in every entry of fresh (whose owners are set to
 * owner); fresh is left empty. Linear in the size of both. */
NP_MUST_CHECK int k8s_store_replace_owner(struct k8s_store *s, int owner, struct k8s_store *fresh,
					  struct np_err *err);

#endif
