/* A sample's goroutine labels (Go's pprof labels), from the record the BPF reader copied out of
 * the process (bpf/go_labels.h): untrusted bytes, checked here, turned into NUL-ended UTF-8
 * strings sorted by key as Go's pprof encoder writes a sample's labels. docs/specs/go-labels.md.
 * Stateless; thread-safe. */
#ifndef NP_PROFILE_GO_LABELS_H
#define NP_PROFILE_GO_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/go_labels.h"

struct np_go_label_set {
	size_t n;
	int cut; /* the reader left labels out or cut a key or value (bpf/go_labels.h's bounds) */
	struct {
		char key[NP_GO_LABEL_KEY];
		char val[NP_GO_LABEL_VAL];
	} l[NP_GO_LABELS_MAX];
};

/* Decodes words[0..n) into out: 0, or -1 when they are no labels record (out->n is then 0). A
 * key or value cut inside a UTF-8 sequence loses the partial rune; a label with an empty key,
 * or with the key of a label before it, is dropped. */
int np_go_labels_decode(const uint64_t *words, size_t n, struct np_go_label_set *out);

#endif
