/* Decoding the Go labels record: see go_labels.h. */
#include "agent/profile/go_labels.h"

#include <stdlib.h>
#include <string.h>

#include "lib/gostr.h"

/* Whether s[0..n) is the start of a multi-byte rune cut short: a lead byte and continuation
 * bytes, fewer than the lead byte asks for. */
static int cut_rune(const unsigned char *s, size_t n)
{
	size_t need = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;

	if (s[0] < 0xc2 || s[0] > 0xf4 || n >= need)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return 1;
}

/* s[0..n), NUL-ended, into out (room for n + 1): a rune cut at the end (the reader cut the
 * string to its room) is left out; any other invalid byte (the process wrote it) becomes '?', as
 * label values are shown and sent as UTF-8. */
static void copy_utf8(char *out, const char *s, size_t n)
{
	size_t i = 0, w;

	while (i < n) {
		uint32_t r = np_go_decode_rune(s + i, n - i, &w);
		if (np_go_rune_invalid(r, w)) {
			if (cut_rune((const unsigned char *)s + i, n - i))
				break;
			out[i++] = '?';
			continue;
		}
		memcpy(out + i, s + i, w);
		i += w;
	}
	out[i] = '\0';
}

static int by_key(const void *a, const void *b)
{
	return strcmp(a, b); /* key is the first member of a label */
}

int np_go_labels_decode(const uint64_t *words, size_t n, struct np_go_label_set *out)
{
	struct np_go_labels r;
	size_t k = 0;

	out->n = 0;
	out->cut = 0;
	if (n < NP_GO_LABELS_WORDS)
		return -1;
	memcpy(&r, words, sizeof(r));
	if (r.magic != NP_GO_LABELS_MAGIC || r.n > NP_GO_LABELS_MAX)
		return -1;
	for (uint32_t i = 0; i < r.n; i++) {
		const struct np_go_label *l = &r.l[i];
		if (l->key_len == 0 || l->key_len >= NP_GO_LABEL_KEY || l->val_len >= NP_GO_LABEL_VAL)
			continue;
		copy_utf8(out->l[k].key, l->key, l->key_len);
		copy_utf8(out->l[k].val, l->val, l->val_len);
		if (out->l[k].key[0])
			k++;
	}
	qsort(out->l, k, sizeof(out->l[0]), by_key);
	/* A map has each key once; a cut key may now equal another. */
	size_t m = 0;
	for (size_t i = 0; i < k; i++) {
		if (m && !strcmp(out->l[m - 1].key, out->l[i].key))
			continue;
		if (m != i)
			out->l[m] = out->l[i];
		m++;
	}
	out->n = m;
	out->cut = r.cut != 0;
	return 0;
}
