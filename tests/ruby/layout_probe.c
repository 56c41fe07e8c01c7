/* What a Ruby version's public headers (ruby-X.Y-dev: include/ruby/) say of the structures the
 * Ruby namer reads (agent/runtime/ruby/namer.c), with the field names of struct rb_layout
 * (agent/runtime/ruby/detect.h), as JSON; compiled by tests/integration/test_ruby_layout.py with
 * `pkg-config --cflags ruby-X.Y`. The constants namer.c and bpf/ruby.h state as the same in every
 * version are checked here at compile time. The VM's internal structures (vm_core.h, not
 * installed) are checked by reading a live process instead (tests/integration/test_ruby_stacks.py). */
#include <stddef.h>
#include <stdio.h>

#include <ruby.h>
#include <ruby/st.h>
#include <ruby/version.h>

#if USE_RVARGC
#error "built with variable-width allocation: an embedded string's length is not in its flags"
#endif

_Static_assert(RUBY_T_MASK == 0x1f && RUBY_T_CLASS == 0x02 && RUBY_T_MODULE == 0x03, "object types");
_Static_assert(RUBY_T_STRING == 0x05 && RUBY_T_ARRAY == 0x07 && RUBY_T_IMEMO == 0x1a, "object types");
_Static_assert(RUBY_FL_USHIFT == 12, "the first user flag");
_Static_assert(sizeof(VALUE) == 8 && sizeof(ID) == 8, "x86-64");

int main(void)
{
	printf("{\"major\": %d, \"minor\": %d", RUBY_API_VERSION_MAJOR, RUBY_API_VERSION_MINOR);
	printf(", \"fl_singleton\": %llu", (unsigned long long)RUBY_FL_SINGLETON);
	printf(", \"str_noembed\": %llu", (unsigned long long)RSTRING_NOEMBED);
	printf(", \"str_embed_len_shift\": %d", (int)RSTRING_EMBED_LEN_SHIFT);
	printf(", \"str_embed_len_mask\": %llu", (unsigned long long)(RSTRING_EMBED_LEN_MASK >> RSTRING_EMBED_LEN_SHIFT));
	printf(", \"str_embed_ary\": %zu", offsetof(struct RString, as.embed.ary));
	printf(", \"str_heap_len\": %zu", offsetof(struct RString, as.heap.len));
	printf(", \"str_heap_ptr\": %zu", offsetof(struct RString, as.heap.ptr));
	printf(", \"str_len\": 0"); /* without USE_RVARGC, an embedded string's length is in its flags */
	printf(", \"ary_embed\": %llu", (unsigned long long)RARRAY_EMBED_FLAG);
	printf(", \"ary_embed_len_shift\": %d", (int)RARRAY_EMBED_LEN_SHIFT);
	printf(", \"ary_embed_len_mask\": %llu", (unsigned long long)(RARRAY_EMBED_LEN_MASK >> RARRAY_EMBED_LEN_SHIFT));
	printf(", \"ary_embed_ary\": %zu", offsetof(struct RArray, as.ary));
	printf(", \"ary_heap_len\": %zu", offsetof(struct RArray, as.heap.len));
	printf(", \"ary_heap_ptr\": %zu", offsetof(struct RArray, as.heap.ptr));
	printf(", \"st_entries_start\": %zu", offsetof(struct st_table, entries_start));
	printf(", \"st_entries_bound\": %zu", offsetof(struct st_table, entries_bound));
	printf(", \"st_entries\": %zu", offsetof(struct st_table, entries));
	printf("}\n");
	return 0;
}
