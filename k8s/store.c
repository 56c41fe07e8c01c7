/* Sorted object cache of the reflectors: see store.h. */
#include "k8s/store.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/sorted.h"

void k8s_store_init(struct k8s_store *s, void (*free_val)(void *val))
{
	memset(s, 0, sizeof(*s));
	s->free_val = free_val;
}

static void free_entry(const struct k8s_store *s, struct k8s_entry *e)
{
	free(e->key);
	if (e->val && s->free_val)
		s->free_val(e->val);
}

void k8s_store_free(struct k8s_store *s)
{
	for (size_t i = 0; i < s->n; i++)
		free_entry(s, &s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

static int cmp_key(const void *key, const void *entry)
{
	return strcmp(key, ((const struct k8s_entry *)entry)->key);
}

static size_t find(const struct k8s_store *s, const char *key, int *found)
{
	return np_sorted_find(s->v, s->n, sizeof(s->v[0]), key, cmp_key, found);
}

void *k8s_store_get(const struct k8s_store *s, const char *key)
{
	int found;
	size_t i = find(s, key, &found);

	return found ? s->v[i].val : NULL;
}

int k8s_store_put(struct k8s_store *s, char *key, int owner, void *val, struct np_err *err)
{
	int found;
	size_t i = find(s, key, &found);

	if (found) {
		free_entry(s, &s->v[i]);
		s->v[i] = (struct k8s_entry){ key, owner, val };
		return 0;
	}
	if (np_grow((void **)&s->v, &s->cap, s->n + 1, sizeof(*s->v))) {
		struct k8s_entry e = { key, owner, val };
		free_entry(s, &e);
		return np_errf(err, "out of memory growing the object cache");
	}
	memmove(&s->v[i + 1], &s->v[i], (s->n - i) * sizeof(s->v[0]));
	s->v[i] = (struct k8s_entry){ key, owner, val };
	s->n++;
	return 0;
}

int k8s_store_del(struct k8s_store *s, const char *key)
{
	int found;
	size_t i = find(s, key, &found);

	if (!found)
		return 0;
	free_entry(s, &s->v[i]);
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(s->v[0]));
	s->n--;
	return 1;
}

int k8s_store_replace_owner(struct k8s_store *s, int owner, struct k8s_store *fresh, struct np_err *err)
{
	struct k8s_entry *merged;
	size_t cap = s->n + fresh->n, n = 0, i = 0, k = 0;

	merged = malloc((cap ? cap : 1) * sizeof(*merged));
	if (!merged)
		return np_errf(err, "out of memory replacing the object cache");
	/* Merge two sorted runs; entries of owner in s are dropped, fresh wins on equal keys. */
	while (i < s->n || k < fresh->n) {
		int c;
		if (i < s->n && s->v[i].owner == owner) {
			free_entry(s, &s->v[i++]);
			continue;
		}
		if (i >= s->n)
			c = 1;
		else if (k >= fresh->n)
			c = -1;
		else
			c = strcmp(s->v[i].key, fresh->v[k].key);
		if (c < 0) {
			merged[n++] = s->v[i++];
		} else {
			if (c == 0)
				free_entry(s, &s->v[i++]);
			merged[n] = fresh->v[k++];
			merged[n++].owner = owner;
		}
	}
	free(s->v);
	s->v = merged;
	s->n = n;
	s->cap = cap ? cap : 1;
	free(fresh->v);
	fresh->v = NULL;
	fresh->n = fresh->cap = 0;
	return 0;
}
