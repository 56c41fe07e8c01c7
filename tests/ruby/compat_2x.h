/* Included first when tests/ruby/vm_layout_probe.c is compiled against Ruby 2.x's internal headers
 * with the installed Ruby 3.1 public headers (tests/ruby/gen_layouts.py): the names 2.x's
 * internal.h, vm_core.h and thread_pthread.h expect of their own version's public headers and
 * config.h, and renames of what 2.x declares that 3.1's public headers declare differently.
 * Nothing here defines or changes a structure the probe measures. */
#include <ruby/ruby.h>
#include <ruby/encoding.h>
#include <ruby/st.h>
#include <ruby/thread_native.h>
#include <setjmp.h>
#include <signal.h>

/* 2.x's config.h and ruby.h */
#define RETSIGTYPE void
#define RUBY_JMP_BUF sigjmp_buf
#define R_CAST(st) (struct st *)
#define GCC_VERSION_SINCE(x, y, z) RBIMPL_COMPILER_SINCE(GCC, x, y, z)
#define GCC_VERSION_BEFORE(x, y, z) RBIMPL_COMPILER_BEFORE(GCC, x, y, z)
#undef RUBY_FUNC_NONNULL
#define RUBY_FUNC_NONNULL(n, x) x
/* declared by both, differently */
#define RB_WARN_CATEGORY_NONE RB2_WARN_CATEGORY_NONE
#define RB_WARN_CATEGORY_DEPRECATED RB2_WARN_CATEGORY_DEPRECATED
#define RB_WARN_CATEGORY_EXPERIMENTAL RB2_WARN_CATEGORY_EXPERIMENTAL
#define rb_warning_category_t rb2_warning_category_t
#define rb_st_copy rb2_st_copy
#define rb_nativethread_cond_t rb2_nativethread_cond_t
