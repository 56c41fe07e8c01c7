/* The one UTF-8 decoder and Go's string semantics, for every module (config, discovery,
 * k8s, relabel, write): results that Go programs produce must come out byte for byte.
 * UTF-8 decoding as Go's unicode/utf8 does it (a bad byte is U+FFFD of width 1; the
 * variants callers need, such as ToValidUTF8's one U+FFFD per run or DecodeLastRune,
 * live here, built on that decoder), strings.ToLower/ToUpper (per code point simple
 * case mapping, from ICU whose Unicode version matches current Go), strconv.Quote (the
 * %q of error messages and string.format) and unicode.IsLetter/IsDigit (label-name rules,
 * built on the decoder, are in labels.h). Stateless; safe from any thread.
 *
 * Non-ASCII runes need ICU's tables (icu.h), loaded on first use; the functions that
 * may need them take an np_err for "Unicode tables (ICU) unavailable". */
#ifndef NP_LIB_GOSTR_H
#define NP_LIB_GOSTR_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/strbuf.h"

#define NP_GO_RUNE_ERROR 0xFFFDu
#define NP_GO_MAX_RUNE 0x10FFFFu

/* Decodes the rune at s[0..n). *width is 1 for an invalid byte (rune U+FFFD), 0 when n == 0. */
uint32_t np_go_decode_rune(const char *s, size_t n, size_t *width);
/* utf8.DecodeLastRune: the rune that ends s[0..n), *width as for np_go_decode_rune (1 when
 * the bytes before n do not end in a whole valid rune). */
uint32_t np_go_decode_last_rune(const char *s, size_t n, size_t *width);
/* Whether a np_go_decode_rune result is the error for an invalid byte (or empty input), as
 * opposed to a well-formed U+FFFD in the text. */
static inline int np_go_rune_invalid(uint32_t r, size_t width)
{
	return r == NP_GO_RUNE_ERROR && width <= 1;
}
/* Writes r as UTF-8 (surrogates and values above U+10FFFF become U+FFFD); returns the length. */
size_t np_go_encode_rune(uint32_t r, char out[4]);
int np_go_utf8_valid(const char *s, size_t n);
/* utf8.RuneCount: an invalid byte counts as one rune. */
size_t np_go_rune_count(const char *s, size_t n);
/* The length of the first max runes of s[0..n) (all of it when shorter), stepping as Go's
 * range loop does: fmt's precision on %s and %q. */
size_t np_go_runes_prefix(const char *s, size_t n, size_t max);
/* strings.ToValidUTF8(s, "\uFFFD"): s[0..n) appended to out with each run of invalid bytes
 * replaced by one U+FFFD (Pyroscope's label values). Returns 1 when something was replaced.
 * Per-byte replacement, as encoding/json does, is np_go_decode_rune's width 1 (np_buf_json_str). */
int np_go_to_valid_utf8(struct np_buf *out, const char *s, size_t n);
/* The longest prefix of the valid UTF-8 s[0..n) of at most max bytes that does not split a
 * rune (a length to cut at). */
size_t np_go_utf8_prefix(const char *s, size_t n, size_t max);

/* strings.ToLower / strings.ToUpper of s[0..n), appended to out (allocation failure
 * marks out as failed). -1 when s is not ASCII and ICU cannot be loaded. */
NP_MUST_CHECK int np_go_to_lower(struct np_buf *out, const char *s, size_t n, struct np_err *err);
NP_MUST_CHECK int np_go_to_upper(struct np_buf *out, const char *s, size_t n, struct np_err *err);

/* strconv.Quote of s (as fmt's %q prints a string), appended to out. Without ICU,
 * non-ASCII runes are escaped as if unprintable. */
void np_go_quote(struct np_buf *out, const char *s, size_t n);

/* unicode.IsLetter / unicode.IsDigit: 1 or 0; -1 when r is not ASCII and ICU cannot be loaded. */
NP_MUST_CHECK int np_go_is_letter(uint32_t r, struct np_err *err);
NP_MUST_CHECK int np_go_is_digit(uint32_t r, struct np_err *err);

#endif
